import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;
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
 * One consumer-group member with the Java consumer, the twin of group_member.py: subscribes, prints
 * each processed record, commits synchronously after every poll and in the revoke callback, and
 * closes cleanly on a {@code close} line or EOF on stdin.
 *
 * <p>With {@code --protocol classic} (the default) the member uses the classic protocol with the
 * eager range assignor and the given session timeout. With {@code --protocol consumer} it sets
 * {@code group.protocol=consumer} (KIP-848) and none of session.timeout.ms, heartbeat.interval.ms
 * and partition.assignment.strategy, which belong to the broker with that protocol;
 * {@code --remote-assignor NAME} sets {@code group.remote.assignor}. {@code --regex REGEX}
 * subscribes to {@code Pattern.compile(REGEX)}, which the 3.9 client resolves against its own
 * metadata and sends to the broker as topic names.
 *
 * <p>With {@code --protocol consumer}, each newly assigned partition is sought to its committed
 * offset in the assign callback (see {@link #seekToCommitted}: a 3.9 client bug would otherwise
 * start it from auto.offset.reset now and then).
 *
 * <p>Output lines: {@code started} (after subscribe), {@code assigned} (partitions, generation),
 * {@code revoked}, {@code lost}, {@code record} (partition, offset, value, topic), {@code committed}
 * (offsets), {@code commit_failed}, {@code seek_failed} (error; consumer protocol only),
 * {@code closed}; the fields are described in group_member.py.
 *
 * <p>Args: bootstrap topic group instanceId|- [sessionTimeoutMs] [--protocol classic|consumer]
 * [--regex REGEX] [--remote-assignor NAME].
 */
public final class GroupMember {
    /** A topic created later must show up quickly for a pattern subscription (default 5 min). */
    private static final String REGEX_METADATA_MAX_AGE_MS = "1000";

    /** How long the assign callback waits for committed offsets (see seekToCommitted). */
    private static final Duration SEEK_LOOKUP_TIMEOUT = Duration.ofSeconds(10);

    private GroupMember() {}

    public static void main(String[] args) {
        List<String> positional = new ArrayList<>();
        String protocol = "classic";
        String regex = null;
        String remoteAssignor = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--protocol" -> protocol = args[++i];
                case "--regex" -> regex = args[++i];
                case "--remote-assignor" -> remoteAssignor = args[++i];
                default -> positional.add(args[i]);
            }
        }
        if (!protocol.equals("classic") && !protocol.equals("consumer")) {
            throw new IllegalArgumentException("--protocol must be classic or consumer, not " + protocol);
        }
        String bootstrap = positional.get(0);
        String topic = positional.get(1);
        String group = positional.get(2);
        String instance = positional.size() > 3 && !positional.get(3).equals("-") ? positional.get(3) : null;
        int sessionMs = positional.size() > 4 ? Integer.parseInt(positional.get(4)) : 6000;

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
        props.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "30000");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "500");
        if (protocol.equals("consumer")) {
            props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            if (remoteAssignor != null) {
                props.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, remoteAssignor);
            }
        } else {
            if (remoteAssignor != null) {
                throw new IllegalArgumentException("--remote-assignor needs --protocol consumer");
            }
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, Integer.toString(sessionMs));
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
            props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName());
        }
        if (regex != null) {
            props.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, REGEX_METADATA_MAX_AGE_MS);
        }

        boolean consumerProtocol = protocol.equals("consumer");
        AtomicBoolean closing = new AtomicBoolean(false);
        Comparator<TopicPartition> order = Comparator.comparing(TopicPartition::topic)
                .thenComparingInt(TopicPartition::partition);
        Map<TopicPartition, OffsetAndMetadata> pending = new TreeMap<>(order);
        Set<TopicPartition> held = new TreeSet<>(order);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    commitPending(consumer, pending, topic);
                    held.removeAll(partitions);
                    emitChange("revoked", topic, partitions, held);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    if (consumerProtocol && !closing.get()) {
                        seekToCommitted(consumer, partitions);
                    }
                    held.addAll(partitions);
                    emitChange("assigned", topic, partitions, held,
                            "generation", consumer.groupMetadata().generationId());
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    pending.clear();
                    held.removeAll(partitions);
                    emitChange("lost", topic, partitions, held);
                }
            };
            if (regex != null) {
                consumer.subscribe(Pattern.compile(regex), listener);
            } else {
                consumer.subscribe(List.of(topic), listener);
            }
            Json.emit("event", "started");
            while (!stop.get()) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    Json.emit("event", "record", "partition", r.partition(), "offset", r.offset(),
                            "value", r.value(), "topic", r.topic());
                    pending.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                commitPending(consumer, pending, topic);
            }
            // close() runs the callbacks still queued, but its OffsetFetch would never be answered.
            closing.set(true);
        }
        Json.emit("event", "closed");
    }

    /**
     * Starts each newly assigned partition at its committed offset, as the consumer would do by
     * itself, to work around KAFKA-17674 in the 3.9 client's consumer protocol (fixed in 4.0): a
     * partition that the background thread adds while poll() is between its committed-offset
     * fetch and its reset step is reset with auto.offset.reset (here: earliest) instead of being
     * started at its committed offset, so it is consumed again from offset 0. A position set here,
     * before the partition becomes fetchable, wins over that reset (a reset that completes later
     * is skipped because the partition no longer awaits one). The committed offsets still come
     * from the broker's OffsetFetch, so a partition handed over before its commit is still seen.
     * Partitions without a committed offset are left to auto.offset.reset. Not done while closing:
     * close() runs the queued callbacks after the consumer stopped answering offset fetches.
     * A failed lookup (say, the broker is restarting) is printed as {@code seek_failed} and leaves
     * the partition to the client's own logic.
     */
    private static void seekToCommitted(KafkaConsumer<String, String> consumer, Collection<TopicPartition> partitions) {
        if (partitions.isEmpty()) {
            return;
        }
        try {
            Map<TopicPartition, OffsetAndMetadata> committed =
                    consumer.committed(Set.copyOf(partitions), SEEK_LOOKUP_TIMEOUT);
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : committed.entrySet()) {
                if (e.getValue() != null) {
                    consumer.seek(e.getKey(), e.getValue());
                }
            }
        } catch (KafkaException e) {
            Json.emit("event", "seek_failed", "error", e.toString());
        }
    }

    /** An assigned/revoked/lost line: TOPIC's partitions, every topic's, and what is held after. */
    private static void emitChange(String kind, String topic, Collection<TopicPartition> partitions,
                                   Set<TopicPartition> held, Object... extra) {
        List<Object> fields = new ArrayList<>(List.of("event", kind, "partitions", partitionsOf(partitions, topic)));
        fields.addAll(List.of(extra));
        fields.addAll(List.of("topics", pairs(partitions), "held", pairs(held)));
        Json.emit(fields.toArray());
    }

    private static void commitPending(KafkaConsumer<String, String> consumer,
                                      Map<TopicPartition, OffsetAndMetadata> pending, String topic) {
        if (pending.isEmpty()) {
            return;
        }
        Map<String, Object> offsets = new TreeMap<>();
        List<Object> topicOffsets = new ArrayList<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : pending.entrySet()) {
            if (e.getKey().topic().equals(topic)) {
                offsets.put(Integer.toString(e.getKey().partition()), e.getValue().offset());
            }
            topicOffsets.add(List.of(e.getKey().topic(), e.getKey().partition(), e.getValue().offset()));
        }
        try {
            consumer.commitSync(pending);
            Json.emit("event", "committed", "offsets", offsets, "topic_offsets", topicOffsets);
        } catch (KafkaException e) {
            Json.emit("event", "commit_failed", "error", e.toString());
        }
        pending.clear();
    }

    private static List<Object> partitionsOf(Collection<TopicPartition> partitions, String topic) {
        List<Object> out = new ArrayList<>();
        partitions.stream().filter(tp -> tp.topic().equals(topic)).map(TopicPartition::partition).sorted()
                .forEach(out::add);
        return out;
    }

    private static List<Object> pairs(Collection<TopicPartition> partitions) {
        List<Object> out = new ArrayList<>();
        partitions.stream()
                .sorted(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition))
                .forEach(tp -> out.add(List.of(tp.topic(), tp.partition())));
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
