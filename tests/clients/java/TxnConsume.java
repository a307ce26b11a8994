import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Reads every partition of a topic from the beginning with the given isolation level, up to the
 * end offsets ListOffsets gives for that level at start (the last stable offset for
 * read_committed, the high watermark for read_uncommitted), and prints one "record" line per
 * record, then one "done" line per partition with its end offset and final position.
 *
 * <p>Args: bootstrap topic isolation (read_committed | read_uncommitted).
 */
public final class TxnConsume {
    private TxnConsume() {}

    public static void main(String[] args) {
        String bootstrap = args[0];
        String topic = args[1];
        String isolation = args[2];

        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        Duration timeout = Duration.ofSeconds(30);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic, timeout)) {
                tps.add(new TopicPartition(topic, p.partition()));
            }
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> end = consumer.endOffsets(tps, timeout);
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (System.nanoTime() < deadline && !caughtUp(consumer, end, timeout)) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    Json.emit("event", "record", "partition", r.partition(), "offset", r.offset(),
                            "key", r.key(), "value", r.value());
                }
            }
            for (TopicPartition tp : tps) {
                Json.emit("event", "done", "partition", tp.partition(), "position", consumer.position(tp, timeout),
                        "end", end.get(tp));
            }
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
