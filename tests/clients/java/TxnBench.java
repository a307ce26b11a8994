import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Producer throughput with and without transactions against one broker
 * (scripts/bench-transactions.sh). Each mode sends count records of size bytes, partition
 * i % partitions, with a fresh producer: {@code idempotent} (the default producer: idempotence
 * on, acks=all; one flush at the end) or {@code txn:N} (a transactional producer committing every
 * N records). Creates the topic, runs each mode once unreported (warm-up), then the modes in
 * turn, rounds times, each round in a rotated order so drift and order effects fall on every mode
 * alike. Prints one "run" line per run (records/s, MiB/s, and the mean time a
 * commitTransaction() call took: it flushes the transaction's last records and waits for
 * EndTxn), then one "summary" line per mode with the median records/s and its ratio to the
 * idempotent producer's median.
 *
 * <p>Args: bootstrap topic partitions count size rounds mode...
 */
public final class TxnBench {
    private TxnBench() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        int count = Integer.parseInt(args[3]);
        int size = Integer.parseInt(args[4]);
        int rounds = Integer.parseInt(args[5]);
        List<String> modes = Arrays.asList(args).subList(6, args.length);
        byte[] value = new byte[size];
        for (int i = 0; i < size; i++) {
            value[i] = (byte) ('a' + i % 26);
        }
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        }
        Map<String, List<Double>> rates = new LinkedHashMap<>();
        for (String mode : modes) {
            rates.put(mode, new ArrayList<>());
        }
        // Warm-up (not reported): each mode once on a fifth of the records, so the first measured
        // round does not pay for class loading and JIT compilation.
        for (String mode : modes) {
            run(bootstrap, topic, partitions, Math.max(1, count / 5), value, mode, "bench-warmup-" + mode);
        }
        for (int round = 0; round < rounds; round++) {
            for (int m = 0; m < modes.size(); m++) {
                String mode = modes.get((m + round) % modes.size());
                double[] result = run(bootstrap, topic, partitions, count, value, mode, "bench-" + round + "-" + mode);
                double rate = result[0];
                rates.get(mode).add(rate);
                Json.emit("event", "run", "round", round, "mode", mode, "records", count,
                        "recordsPerSec", Math.round(rate), "mibPerSec", Math.round(rate * size / 1048576.0 * 10) / 10.0,
                        "meanCommitMs", Math.round(result[1] * 100) / 100.0);
            }
        }
        Double base = rates.containsKey("idempotent") ? median(rates.get("idempotent")) : null;
        for (Map.Entry<String, List<Double>> e : rates.entrySet()) {
            double m = median(e.getValue());
            Json.emit("event", "summary", "mode", e.getKey(), "medianRecordsPerSec", Math.round(m),
                    "ratioToIdempotent", base == null ? null : Math.round(m / base * 1000) / 1000.0);
        }
    }

    /** Returns {records/s, mean milliseconds per commitTransaction() (0 without transactions)}. */
    private static double[] run(String bootstrap, String topic, int partitions, int count, byte[] value, String mode,
            String transactionalId) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        int perTxn = 0;
        if (mode.startsWith("txn:")) {
            perTxn = Integer.parseInt(mode.substring(4));
            props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        } else if (!mode.equals("idempotent")) {
            throw new IllegalArgumentException("unknown mode " + mode);
        }
        long commitNanos = 0;
        int commits = 0;
        AtomicInteger failed = new AtomicInteger();
        AtomicReference<Exception> firstError = new AtomicReference<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            if (perTxn > 0) {
                producer.initTransactions();
            }
            long start = System.nanoTime();
            for (int i = 0; i < count; i++) {
                if (perTxn > 0 && i % perTxn == 0) {
                    producer.beginTransaction();
                }
                producer.send(new ProducerRecord<>(topic, i % partitions, null, value), (md, e) -> {
                    if (e != null) {
                        failed.incrementAndGet();
                        firstError.compareAndSet(null, e);
                    }
                });
                if (perTxn > 0 && ((i + 1) % perTxn == 0 || i + 1 == count)) {
                    long before = System.nanoTime();
                    producer.commitTransaction();
                    commitNanos += System.nanoTime() - before;
                    commits++;
                }
            }
            producer.flush();
            long elapsed = System.nanoTime() - start;
            if (failed.get() > 0) {
                throw new IllegalStateException(failed.get() + " sends failed in mode " + mode, firstError.get());
            }
            double meanCommitMs = commits == 0 ? 0 : commitNanos / 1e6 / commits;
            return new double[] {count / (elapsed / 1e9), meanCommitMs};
        }
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(null);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}
