import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Produces records across every partition of a topic with the Java producer's defaults
 * (idempotent, acks=all), so a cluster's producer talks to each partition's leader, and prints
 * one "ack" line per record.
 *
 * <p>Args: bootstrap topic prefix count partitions baseTimestamp. Record i is records.py's
 * make_records(prefix, count)[i] and goes to partition i % partitions.
 */
public final class ProducePartitions {
    private ProducePartitions() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String prefix = args[2];
        int count = Integer.parseInt(args[3]);
        int partitions = Integer.parseInt(args[4]);
        long baseTimestamp = Long.parseLong(args[5]);

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        // Fail within a minute rather than hang when the cluster cannot take the records (a
        // producer id needs etcd): close() with no bound waits for every record in flight.
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
        KafkaProducer<String, String> producer = new KafkaProducer<>(props);
        try {
            List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                RecordHeaders headers = new RecordHeaders();
                headers.add(new RecordHeader("h", (prefix + "-h-" + i).getBytes(StandardCharsets.UTF_8)));
                acks.add(producer.send(new ProducerRecord<>(topic, i % partitions, baseTimestamp + i,
                        prefix + "-key-" + i, prefix + "-value-" + i, headers)));
            }
            for (int i = 0; i < count; i++) {
                RecordMetadata md = acks.get(i).get(60, TimeUnit.SECONDS);
                Json.emit("event", "ack", "index", i, "partition", md.partition(), "offset", md.offset());
            }
        } finally {
            producer.close(Duration.ofSeconds(10));
        }
    }
}
