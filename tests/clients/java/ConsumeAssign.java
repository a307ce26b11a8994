import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Consumes a manually assigned partition with the Java consumer: prints the beginning and end
 * offsets, the offsetsForTimes answer for a timestamp, then seeks there and prints each record up
 * to the end offset.
 *
 * <p>Args: bootstrap topic partition targetTimestamp.
 */
public final class ConsumeAssign {
    private ConsumeAssign() {}

    public static void main(String[] args) {
        String bootstrap = args[0];
        TopicPartition tp = new TopicPartition(args[1], Integer.parseInt(args[2]));
        long target = Long.parseLong(args[3]);

        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        Duration timeout = Duration.ofSeconds(30);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.assign(List.of(tp));
            long begin = consumer.beginningOffsets(List.of(tp), timeout).get(tp);
            long end = consumer.endOffsets(List.of(tp), timeout).get(tp);
            Json.emit("event", "offsets", "beginning", begin, "end", end);

            OffsetAndTimestamp found = consumer.offsetsForTimes(Map.of(tp, target), timeout).get(tp);
            if (found == null) {
                Json.emit("event", "offsetForTime", "offset", null, "timestamp", null);
                return;
            }
            Json.emit("event", "offsetForTime", "offset", found.offset(), "timestamp", found.timestamp());

            consumer.seek(tp, found.offset());
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            long next = found.offset();
            while (next < end && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    List<Object> headers = new ArrayList<>();
                    for (Header h : r.headers()) {
                        headers.add(List.of(h.key(), new String(h.value(), StandardCharsets.UTF_8)));
                    }
                    Json.emit("event", "record", "offset", r.offset(), "key", r.key(), "value", r.value(),
                            "timestamp", r.timestamp(), "timestampType", r.timestampType().name,
                            "headers", headers);
                    next = r.offset() + 1;
                }
            }
            Json.emit("event", "done", "position", consumer.position(tp, timeout));
        }
    }
}
