import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Reads partitions 0..n-1 of a topic from the beginning with the Java consumer (assigned, no
 * group) until it has read `total` records, printing one "record" line per record and "done".
 * The consumer's fetches use incremental fetch sessions (KIP-227) when the broker grants them.
 *
 * <p>Args: bootstrap topic partitions total.
 */
public final class SessionConsume {
    private SessionConsume() {}

    public static void main(String[] args) {
        String bootstrap = args[0];
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        long total = Long.parseLong(args[3]);

        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                tps.add(new TopicPartition(topic, p));
            }
            consumer.assign(tps);
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            long read = 0;
            while (read < total && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    Json.emit("event", "record", "partition", r.partition(), "offset", r.offset(),
                            "value", r.value());
                    read++;
                }
            }
            Json.emit("event", "done", "read", read);
        }
    }
}
