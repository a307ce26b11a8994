import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Sends records with the Java producer's default settings (idempotence on, acks=all, unlimited
 * retries within delivery.timeout.ms) and prints one "done" line with how many were acknowledged
 * and how many failed. Used through a proxy that breaks Produce exchanges: every record must be
 * acknowledged exactly once and appear exactly once.
 *
 * <p>Args: bootstrap topic prefix count partitions chunk. Record i goes to partition
 * i % partitions with key prefix-key-i and value prefix-value-i; the producer is flushed after
 * every chunk records, so a run makes many Produce requests.
 */
public final class IdempotentProduce {
    private IdempotentProduce() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String prefix = args[2];
        int count = Integer.parseInt(args[3]);
        int partitions = Integer.parseInt(args[4]);
        int chunk = Integer.parseInt(args[5]);

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        AtomicInteger acked = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicReference<String> firstError = new AtomicReference<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < count; i++) {
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
                if ((i + 1) % chunk == 0) {
                    producer.flush();
                }
            }
            producer.flush();
        }
        Json.emit("event", "done", "acked", acked.get(), "failed", failed.get(), "firstError", firstError.get());
    }
}
