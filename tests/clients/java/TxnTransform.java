import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Consume-transform-produce with exactly-once: reads the input topic read_committed from the
 * group's committed offsets (manual assignment of every partition), and for each poll (at most
 * batch records) writes one output record per input record (same partition, same key, value
 * "T:" + input value) and the consumed offsets (sendOffsetsToTransaction) in one transaction.
 * Prints "sent" once a transaction's records and offsets are with the broker (then waits pauseMs
 * before committing, a window for the caller to kill it mid-transaction), "committed" after each
 * transaction with the group's new positions, and "done" once the positions reach the input's
 * end offsets as found at start.
 *
 * <p>Any error ends the program with exit code 2 after an "error" line (nothing is retried
 * here): the caller starts it again and it carries on from the committed offsets, its
 * initTransactions() fencing and aborting whatever the previous run left open.
 *
 * <p>Args: bootstrap inputTopic outputTopic groupId transactionalId batch pauseMs.
 */
public final class TxnTransform {
    private TxnTransform() {}

    public static void main(String[] args) {
        String bootstrap = args[0];
        String input = args[1];
        String output = args[2];
        String groupId = args[3];
        String transactionalId = args[4];
        int batch = Integer.parseInt(args[5]);
        long pauseMs = Long.parseLong(args[6]);

        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, batch);
        cp.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000);
        cp.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);

        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        pp.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 10_000);
        pp.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20_000);
        pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20_000);

        Duration timeout = Duration.ofSeconds(20);
        int transactions = 0;
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp);
        KafkaProducer<String, String> producer = new KafkaProducer<>(pp);
        try {
            producer.initTransactions();
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(input, timeout)) {
                tps.add(new TopicPartition(input, p.partition()));
            }
            consumer.assign(tps);
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(new HashSet<>(tps), timeout);
            Map<String, Long> start = new HashMap<>();
            for (TopicPartition tp : tps) {
                OffsetAndMetadata om = committed.get(tp);
                long offset = om == null ? 0 : om.offset();
                consumer.seek(tp, offset);
                start.put(String.valueOf(tp.partition()), offset);
            }
            Map<TopicPartition, Long> end = consumer.endOffsets(tps, timeout);
            Json.emit("event", "started", "committed", start);
            while (!caughtUp(consumer, end, timeout)) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>(output, r.partition(), r.key(), "T:" + r.value()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.flush();
                // The transaction's records and offsets are with the broker, not yet committed.
                Json.emit("event", "sent", "records", records.count());
                if (pauseMs > 0) {
                    Thread.sleep(pauseMs);
                }
                producer.commitTransaction();
                transactions++;
                Map<String, Long> positions = new HashMap<>();
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                    positions.put(String.valueOf(e.getKey().partition()), e.getValue().offset());
                }
                Json.emit("event", "committed", "records", records.count(), "positions", positions);
            }
            Json.emit("event", "done", "transactions", transactions);
            producer.close(Duration.ofSeconds(10));
            consumer.close(Duration.ofSeconds(10));
        } catch (Exception e) {
            StringBuilder sb = new StringBuilder();
            for (Throwable t = e; t != null; t = t.getCause()) {
                sb.append(sb.length() > 0 ? " <- " : "").append(t.getClass().getName()).append(": ")
                        .append(t.getMessage());
            }
            Json.emit("event", "error", "transactions", transactions, "error", sb.toString());
            // No close: it could wait on a broker that is down; the next run fences this one.
            Runtime.getRuntime().halt(2);
        }
    }

    private static boolean caughtUp(KafkaConsumer<String, String> consumer, Map<TopicPartition, Long> end,
            Duration timeout) {
        for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
            if (consumer.position(e.getKey(), timeout) < e.getValue()) {
                return false;
            }
        }
        return true;
    }
}
