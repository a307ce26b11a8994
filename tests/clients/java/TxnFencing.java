import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Zombie fencing: producer A (transactional id X) begins a transaction and writes records to
 * every partition (flushed: they are in the log); producer B with the same id then calls
 * initTransactions(), which must fence A and abort its open transaction; B commits records of its
 * own. A then sends once more and tries to commit: that must fail with ProducerFencedException or
 * InvalidProducerEpochException (anywhere in the cause chain).
 *
 * <p>Args: bootstrap transactionalId topic partitions count. A's records: zombie-key-i /
 * zombie-value-i (i &lt; count) and zombie-late-0 after the fence; B's: fenced-in-key-i /
 * fenced-in-value-i. Prints "a_sent", "b_committed" and one "a_outcome" line naming each
 * exception A saw and whether it counts as fenced.
 */
public final class TxnFencing {
    private TxnFencing() {}

    private static KafkaProducer<String, String> producer(String bootstrap, String transactionalId) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000);
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        return new KafkaProducer<>(props);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String transactionalId = args[1];
        String topic = args[2];
        int partitions = Integer.parseInt(args[3]);
        int count = Integer.parseInt(args[4]);

        KafkaProducer<String, String> a = producer(bootstrap, transactionalId);
        a.initTransactions();
        a.beginTransaction();
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sent.add(a.send(new ProducerRecord<>(topic, i % partitions, "zombie-key-" + i, "zombie-value-" + i)));
        }
        a.flush();
        for (Future<RecordMetadata> f : sent) {
            f.get();
        }
        Json.emit("event", "a_sent", "count", count);

        try (KafkaProducer<String, String> b = producer(bootstrap, transactionalId)) {
            b.initTransactions();
            b.beginTransaction();
            for (int i = 0; i < count; i++) {
                b.send(new ProducerRecord<>(topic, i % partitions, "fenced-in-key-" + i, "fenced-in-value-" + i));
            }
            b.commitTransaction();
            Json.emit("event", "b_committed", "count", count);
        }

        List<String> seen = new ArrayList<>();
        boolean fenced = false;
        boolean committed = false;
        try {
            a.send(new ProducerRecord<>(topic, 0, "zombie-late-key-0", "zombie-late-value-0")).get();
            seen.add("send: ok");
        } catch (Exception e) {
            seen.add("send: " + chain(e));
            fenced |= isFenced(e);
        }
        try {
            a.commitTransaction();
            committed = true;
        } catch (Exception e) {
            seen.add("commit: " + chain(e));
            fenced |= isFenced(e);
        }
        a.close();
        Json.emit("event", "a_outcome", "fenced", fenced, "committed", committed, "exceptions", seen);
    }

    private static boolean isFenced(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ProducerFencedException || t instanceof InvalidProducerEpochException) {
                return true;
            }
        }
        return false;
    }

    private static String chain(Throwable e) {
        StringBuilder sb = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (sb.length() > 0) {
                sb.append(" <- ");
            }
            sb.append(t.getClass().getName()).append(": ").append(t.getMessage());
        }
        return sb.toString();
    }
}
