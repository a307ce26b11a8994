import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Produce and consume throughput over one listener (scripts/bench-security.sh), like
 * kafka-producer-perf-test / kafka-consumer-perf-test: the default producer (idempotent,
 * acks=all) sends count records of size bytes to a new topic of 3 partitions and flushes; then a
 * consumer assigned to every partition reads them all from the beginning. A warm-up run on a fifth
 * of the records (another topic, not reported) comes first, so class loading, JIT and the TLS or
 * SASL handshakes are not measured. Prints a "produce" and a "consume" line with records/s and
 * MB/s (10^6 bytes of record values per second).
 *
 * <p>Args: bootstrap topic count size [key=value...] (security settings for every client).
 */
public final class SecurityBench {
    private SecurityBench() {}

    private static final int PARTITIONS = 3;

    public static void main(String[] args) throws Exception {
        Properties security = new Properties();
        security.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        int size = Integer.parseInt(args[3]);
        for (int i = 4; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            security.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        byte[] value = new byte[size];
        for (int i = 0; i < size; i++) {
            value[i] = (byte) ('a' + i % 26);
        }
        try (Admin admin = Admin.create(security)) {
            admin.createTopics(List.of(new NewTopic(topic + "-warmup", PARTITIONS, (short) 1),
                    new NewTopic(topic, PARTITIONS, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
        produce(security, topic + "-warmup", Math.max(1, count / 5), value);
        consume(security, topic + "-warmup", Math.max(1, count / 5));

        double produceSeconds = produce(security, topic, count, value);
        report("produce", count, size, produceSeconds);
        double consumeSeconds = consume(security, topic, count);
        report("consume", count, size, consumeSeconds);
    }

    private static void report(String phase, int count, int size, double seconds) {
        Json.emit("event", phase, "records", count, "seconds", Math.round(seconds * 1000) / 1000.0,
                "recordsPerSec", Math.round(count / seconds),
                "mbPerSec", Math.round(count * (double) size / seconds / 1e6 * 100) / 100.0);
    }

    private static double produce(Properties security, String topic, int count, byte[] value) throws Exception {
        Properties props = new Properties();
        props.putAll(security);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        AtomicReference<Exception> failure = new AtomicReference<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            producer.partitionsFor(topic); // metadata and connections before the clock starts
            long start = System.nanoTime();
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, i % PARTITIONS, null, value), (md, e) -> {
                    if (e != null) {
                        failure.compareAndSet(null, e);
                    }
                });
            }
            producer.flush();
            double seconds = (System.nanoTime() - start) / 1e9;
            if (failure.get() != null) {
                throw failure.get();
            }
            return seconds;
        }
    }

    private static double consume(Properties security, String topic, int count) {
        Properties props = new Properties();
        props.putAll(security);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                tps.add(new TopicPartition(topic, p));
            }
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            consumer.position(tps.get(0)); // connections and offset lookups before the clock starts
            long start = System.nanoTime();
            long deadline = start + TimeUnit.SECONDS.toNanos(300);
            int read = 0;
            while (read < count) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("read " + read + " of " + count + " records in 300 s");
                }
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                read += records.count();
            }
            return (System.nanoTime() - start) / 1e9;
        }
    }
}
