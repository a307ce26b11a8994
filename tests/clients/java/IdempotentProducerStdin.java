import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * One long-lived Java producer at default settings (idempotent), driven over stdin so a test can
 * crash and restart the broker under it and keep producing with the same producer id.
 *
 * <p>Args: bootstrap topic prefix partitions. Commands, one per line: {@code send <start> <count>}
 * sends records start..start+count-1 (record i to partition i % partitions, key prefix-key-i,
 * value prefix-value-i) without waiting; {@code flush} waits for every send so far and prints a
 * "flushed" line with the acknowledged and failed totals; {@code quit} closes the producer.
 */
public final class IdempotentProducerStdin {
    private IdempotentProducerStdin() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String prefix = args[2];
        int partitions = Integer.parseInt(args[3]);

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        AtomicInteger acked = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicReference<String> firstError = new AtomicReference<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            Json.emit("event", "ready");
            String line;
            while ((line = in.readLine()) != null) {
                String[] cmd = line.trim().split("\\s+");
                if (cmd[0].equals("send")) {
                    int start = Integer.parseInt(cmd[1]);
                    int count = Integer.parseInt(cmd[2]);
                    for (int i = start; i < start + count; i++) {
                        producer.send(
                                new ProducerRecord<>(topic, i % partitions, prefix + "-key-" + i, prefix + "-value-" + i),
                                (md, e) -> {
                                    if (e == null) {
                                        acked.incrementAndGet();
                                    } else {
                                        failed.incrementAndGet();
                                        firstError.compareAndSet(null, e.getClass().getName() + ": " + e.getMessage());
                                    }
                                });
                    }
                    Json.emit("event", "sent", "start", start, "count", count);
                } else if (cmd[0].equals("flush")) {
                    producer.flush();
                    Json.emit("event", "flushed", "acked", acked.get(), "failed", failed.get(),
                            "firstError", firstError.get());
                } else if (cmd[0].equals("quit")) {
                    break;
                }
            }
        }
        Json.emit("event", "closed", "acked", acked.get(), "failed", failed.get());
    }
}
