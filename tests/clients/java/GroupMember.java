import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One consumer-group member with the Java consumer, the twin of group_member.py: subscribes (range
 * assignor, eager), prints each processed record, commits synchronously after every poll and in
 * the revoke callback, and closes cleanly on a {@code close} line or EOF on stdin.
 *
 * <p>Output lines: {@code started} (after subscribe), {@code assigned} (partitions, generation), {@code revoked}, {@code lost},
 * {@code record} (partition, offset, value), {@code committed} (offsets), {@code commit_failed},
 * {@code closed}.
 *
 * <p>Args: bootstrap topic group instanceId|- [sessionTimeoutMs].
 */
public final class GroupMember {
    private GroupMember() {}

    public static void main(String[] args) {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        String instance = args[3].equals("-") ? null : args[3];
        int sessionMs = args.length > 4 ? Integer.parseInt(args[4]) : 6000;

        AtomicBoolean stop = new AtomicBoolean(false);
        Thread watcher = new Thread(() -> watchStdin(stop), "stdin-watcher");
        watcher.setDaemon(true);
        watcher.start();

        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        if (instance != null) {
            props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
        }
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, Integer.toString(sessionMs));
        props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        props.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "30000");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "500");
        props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName());

        Map<TopicPartition, OffsetAndMetadata> pending = new TreeMap<>(
                (a, b) -> Integer.compare(a.partition(), b.partition()));
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    commitPending(consumer, pending);
                    Json.emit("event", "revoked", "partitions", sorted(partitions));
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    Json.emit("event", "assigned", "partitions", sorted(partitions),
                            "generation", consumer.groupMetadata().generationId());
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    pending.clear();
                    Json.emit("event", "lost", "partitions", sorted(partitions));
                }
            });
            Json.emit("event", "started");
            while (!stop.get()) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    Json.emit("event", "record", "partition", r.partition(), "offset", r.offset(),
                            "value", r.value());
                    pending.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                commitPending(consumer, pending);
            }
        }
        Json.emit("event", "closed");
    }

    private static void commitPending(KafkaConsumer<String, String> consumer,
                                      Map<TopicPartition, OffsetAndMetadata> pending) {
        if (pending.isEmpty()) {
            return;
        }
        Map<String, Object> offsets = new TreeMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : pending.entrySet()) {
            offsets.put(Integer.toString(e.getKey().partition()), e.getValue().offset());
        }
        try {
            consumer.commitSync(pending);
            Json.emit("event", "committed", "offsets", offsets);
        } catch (KafkaException e) {
            Json.emit("event", "commit_failed", "error", e.toString());
        }
        pending.clear();
    }

    private static List<Object> sorted(Collection<TopicPartition> partitions) {
        List<Object> out = new ArrayList<>();
        partitions.stream().map(TopicPartition::partition).sorted().forEach(out::add);
        return out;
    }

    private static void watchStdin(AtomicBoolean stop) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.trim().equals("close")) {
                    break;
                }
            }
        } catch (IOException e) {
            // Treat a broken stdin like EOF: the test that drives us is gone.
        }
        stop.set(true);
    }
}
