import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A transactional producer that runs a plan of transactions, one per step, and prints one JSON
 * line per step with the offsets the broker gave its records.
 *
 * <p>Args: bootstrap transactionalId topic partitions transactionTimeoutMs step... where a step
 * is {@code commit:PREFIX:COUNT}, {@code abort:PREFIX:COUNT} or {@code halt:PREFIX:COUNT}. Record
 * i of a step goes to partition i % partitions with key PREFIX-key-i and value PREFIX-value-i.
 * {@code commit}/{@code abort} end the transaction that way; {@code halt} flushes the records
 * (they are in the log, the transaction is open) and then stops the JVM at once, without
 * committing, aborting or closing: a producer that died mid-transaction.
 */
public final class TxnProducer {
    private TxnProducer() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String transactionalId = args[1];
        String topic = args[2];
        int partitions = Integer.parseInt(args[3]);
        int timeoutMs = Integer.parseInt(args[4]);

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, timeoutMs);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000);
        KafkaProducer<String, String> producer = new KafkaProducer<>(props);
        producer.initTransactions();
        Json.emit("event", "initialized", "transactionalId", transactionalId);
        for (int s = 5; s < args.length; s++) {
            String[] step = args[s].split(":");
            String action = step[0];
            String prefix = step[1];
            int count = Integer.parseInt(step[2]);
            producer.beginTransaction();
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(
                        new ProducerRecord<>(topic, i % partitions, prefix + "-key-" + i, prefix + "-value-" + i)));
            }
            producer.flush();
            // partition -> [first offset, last offset] of this step's records
            Map<Integer, List<Long>> offsets = new TreeMap<>();
            for (Future<RecordMetadata> f : sent) {
                RecordMetadata md = f.get();
                offsets.computeIfAbsent(md.partition(), p -> new ArrayList<>(List.of(md.offset(), md.offset())));
                List<Long> range = offsets.get(md.partition());
                range.set(0, Math.min(range.get(0), md.offset()));
                range.set(1, Math.max(range.get(1), md.offset()));
            }
            switch (action) {
                case "commit" -> producer.commitTransaction();
                case "abort" -> producer.abortTransaction();
                case "halt" -> {
                    Json.emit("event", "txn", "result", "open", "prefix", prefix, "count", count, "offsets", offsets);
                    Runtime.getRuntime().halt(0);
                }
                default -> throw new IllegalArgumentException("unknown step " + args[s]);
            }
            Json.emit("event", "txn", "result", action, "prefix", prefix, "count", count, "offsets", offsets);
        }
        producer.close();
        Json.emit("event", "done");
    }
}
