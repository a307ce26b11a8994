import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Sets a producer_byte_rate quota for a client id with the Admin API, reads it back, then produces
 * 1 KiB records as fast as the producer can for warmup + measure seconds and prints the rate of
 * acknowledged value bytes during the measured seconds and the producer's largest throttle time.
 *
 * <p>Args: bootstrap topic clientId quotaBytesPerSecond warmupSeconds measureSeconds.
 */
public final class QuotaProduce {
    private QuotaProduce() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String clientId = args[2];
        double quota = Double.parseDouble(args[3]);
        long warmupMs = Long.parseLong(args[4]) * 1000;
        long measureMs = Long.parseLong(args[5]) * 1000;

        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, clientId));
        try (Admin admin = Admin.create(ap)) {
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity,
                    List.of(new ClientQuotaAlteration.Op("producer_byte_rate", quota))))).all().get();
            Map<ClientQuotaEntity, Map<String, Double>> described = admin.describeClientQuotas(
                    ClientQuotaFilter.containsOnly(List.of(
                            ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, clientId))))
                    .entities().get();
            Json.emit("event", "described", "producer_byte_rate",
                    described.getOrDefault(entity, Map.of()).getOrDefault("producer_byte_rate", -1.0));
        }

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ProducerConfig.ACKS_CONFIG, "1");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        // A small buffer: send() waits for room instead of queueing minutes of data.
        props.put(ProducerConfig.BUFFER_MEMORY_CONFIG, "262144");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        byte[] value = new byte[1024];
        AtomicLong measured = new AtomicLong();
        AtomicLong total = new AtomicLong();
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
        long start = System.currentTimeMillis();
        long from = start + warmupMs;
        long until = from + measureMs;
        try {
            while (System.currentTimeMillis() < until) {
                producer.send(new ProducerRecord<>(topic, value), (md, e) -> {
                    if (e != null) {
                        return;
                    }
                    long now = System.currentTimeMillis();
                    total.addAndGet(value.length);
                    if (now >= from && now < until) {
                        measured.addAndGet(value.length);
                    }
                });
            }
            double throttleMax = 0;
            for (Map.Entry<MetricName, ? extends Metric> m : producer.metrics().entrySet()) {
                if (m.getKey().name().equals("produce-throttle-time-max")
                        && m.getKey().group().equals("producer-metrics")) {
                    Object v = m.getValue().metricValue();
                    if (v instanceof Double) {
                        throttleMax = Math.max(throttleMax, (Double) v);
                    }
                }
            }
            Json.emit("event", "result", "bytes_per_second", measured.get() * 1000.0 / measureMs,
                    "total_bytes", total.get(), "throttle_time_max_ms", throttleMax);
        } finally {
            producer.close(Duration.ZERO);
        }
    }
}
