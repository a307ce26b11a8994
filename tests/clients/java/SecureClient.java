import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java client over a secured listener. The security settings (security.protocol, ssl.*,
 * sasl.*) come as key=value arguments and go to every client the program makes; the other
 * arguments are positional. Prints JSON lines.
 *
 * <p>Args: mode bootstrap [positional...] [key=value...]. Modes:
 *
 * <ul>
 *   <li>{@code produce-consume topic count prefix}: the default (idempotent) producer writes
 *       records prefix-key-i / prefix-value-i to partition 0, prints "produced" with their
 *       offsets, then a consumer reads partition 0 from the beginning until it has that many
 *       records (or 60 s pass) and prints "consumed" with [offset, key, value] of each.
 *   <li>{@code probe}: an Admin describeCluster; prints "ok" with the node count, or "error" with
 *       the class and message of the root cause (the client's view of a refused connection).
 *   <li>{@code scram-users user:mechanism:password:iterations...}: alterUserScramCredentials
 *       (one request each), then describeUserScramCredentials; prints "users" {name: [[mechanism, iterations]]}.
 *   <li>{@code reauth-consume topic seconds}: a producer writes one record every 100 ms while a
 *       consumer assigned to partition 0 reads them, for that many seconds; prints "metrics" with
 *       the consumer's connection and (re-)authentication counters once the first record arrived
 *       and at the end, then "consumed" with the offsets read and "produced" with the count sent.
 *   <li>{@code create-acls principal:resourceType:name:operation:permission...}: createAcls of
 *       LITERAL patterns on any host; prints "created" or "error" (class of the cause).
 *   <li>{@code describe-acls}: describeAcls(ANY); prints "acls" with
 *       [principal, resourceType, name, patternType, operation, permission] per binding, sorted,
 *       or "error".
 *   <li>{@code create-topic topic}: createTopics (1 partition); prints "created" or "error".
 *   <li>{@code produce-one topic}: one record to partition 0; prints "produced" with its offset,
 *       or "error" with the class of the cause.
 * </ul>
 */
public final class SecureClient {
    private SecureClient() {}

    /** The consumer's counters the re-authentication test compares. */
    private static final List<String> COUNTERS = List.of("connection-creation-total", "connection-close-total",
            "successful-authentication-total", "failed-authentication-total",
            "successful-reauthentication-total", "failed-reauthentication-total");

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        Properties security = new Properties();
        security.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        List<String> positional = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq > 0) {
                security.put(args[i].substring(0, eq), args[i].substring(eq + 1));
            } else {
                positional.add(args[i]);
            }
        }
        switch (mode) {
            case "produce-consume" -> produceConsume(security, positional.get(0),
                    Integer.parseInt(positional.get(1)), positional.get(2));
            case "probe" -> probe(security);
            case "scram-users" -> scramUsers(security, positional);
            case "reauth-consume" -> reauthConsume(security, positional.get(0), Integer.parseInt(positional.get(1)));
            case "create-acls" -> createAcls(security, positional);
            case "describe-acls" -> describeAcls(security);
            case "create-topic" -> createTopic(security, positional.get(0));
            case "produce-one" -> produceOne(security, positional.get(0));
            default -> throw new IllegalArgumentException("unknown mode " + mode);
        }
    }

    private static Properties producerProps(Properties security) {
        Properties props = new Properties();
        props.putAll(security);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        return props;
    }

    private static Properties consumerProps(Properties security) {
        Properties props = new Properties();
        props.putAll(security);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        return props;
    }

    private static void produceConsume(Properties security, String topic, int count, String prefix)
            throws Exception {
        List<Object> offsets = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps(security))) {
            List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                acks.add(producer.send(new ProducerRecord<>(topic, 0, prefix + "-key-" + i, prefix + "-value-" + i)));
            }
            for (Future<RecordMetadata> ack : acks) {
                offsets.add(ack.get(60, TimeUnit.SECONDS).offset());
            }
        }
        Json.emit("event", "produced", "offsets", offsets);

        List<Object> records = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps(security))) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (records.size() < count && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    records.add(List.of(r.offset(), r.key(), r.value()));
                }
            }
        }
        Json.emit("event", "consumed", "records", records);
    }

    private static void probe(Properties security) {
        Properties props = new Properties();
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "8000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "4000");
        props.putAll(security);
        try (Admin admin = Admin.create(props)) {
            int nodes = admin.describeCluster().nodes().get(20, TimeUnit.SECONDS).size();
            Json.emit("event", "ok", "nodes", nodes);
        } catch (Exception e) {
            Throwable cause = e;
            while (cause.getCause() != null && cause.getCause() != cause) {
                cause = cause.getCause();
            }
            Throwable top = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null
                    ? e.getCause() : e;
            Json.emit("event", "error", "class", top.getClass().getSimpleName(),
                    "rootClass", cause.getClass().getSimpleName(), "message", String.valueOf(top.getMessage()));
        }
    }

    private static void scramUsers(Properties security, List<String> specs) throws Exception {
        List<UserScramCredentialAlteration> alterations = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (String spec : specs) {
            String[] parts = spec.split(":", 4);
            ScramMechanism mechanism = ScramMechanism.fromMechanismName(parts[1]);
            alterations.add(new UserScramCredentialUpsertion(parts[0],
                    new ScramCredentialInfo(mechanism, Integer.parseInt(parts[3])), parts[2]));
            if (!names.contains(parts[0])) {
                names.add(parts[0]);
            }
        }
        try (Admin admin = Admin.create(security)) {
            // Kafka refuses a user named twice in one request (DUPLICATE_RESOURCE), even for two
            // mechanisms: one request per credential.
            for (UserScramCredentialAlteration alteration : alterations) {
                admin.alterUserScramCredentials(List.of(alteration)).all().get(30, TimeUnit.SECONDS);
            }
            Map<String, UserScramCredentialsDescription> described =
                    admin.describeUserScramCredentials(names).all().get(30, TimeUnit.SECONDS);
            Map<String, Object> users = new TreeMap<>();
            for (Map.Entry<String, UserScramCredentialsDescription> e : described.entrySet()) {
                List<Object> infos = new ArrayList<>();
                for (ScramCredentialInfo info : e.getValue().credentialInfos()) {
                    infos.add(List.of(info.mechanism().mechanismName(), info.iterations()));
                }
                users.put(e.getKey(), infos);
            }
            Json.emit("event", "users", "users", users);
        }
    }

    private static void reauthConsume(Properties security, String topic, int seconds) throws Exception {
        TopicPartition tp = new TopicPartition(topic, 0);
        List<Object> offsets = new ArrayList<>();
        int sent = 0;
        Properties consumerProps = consumerProps(security);
        // Short long-polls: a client re-authenticates between requests, so a fetch held for the
        // default 500 ms near the end of a session would make it late.
        consumerProps.put("fetch.max.wait.ms", "100");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps(security));
                KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps)) {
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            Map<String, Double> first = null;
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            long nextSend = System.nanoTime();
            while (System.nanoTime() < end) {
                if (System.nanoTime() >= nextSend) {
                    producer.send(new ProducerRecord<>(topic, 0, "k" + sent, "v" + sent));
                    sent++;
                    nextSend += TimeUnit.MILLISECONDS.toNanos(100);
                }
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(50))) {
                    offsets.add(r.offset());
                }
                if (first == null && !offsets.isEmpty()) {
                    first = counters(consumer.metrics());
                }
            }
            producer.flush();
            // Read what the last sends wrote.
            long drain = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (offsets.size() < sent && System.nanoTime() < drain) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    offsets.add(r.offset());
                }
            }
            Json.emit("event", "metrics", "first", first, "last", counters(consumer.metrics()));
        }
        Json.emit("event", "consumed", "offsets", offsets);
        Json.emit("event", "produced", "count", sent);
    }

    /** Prints "error" with the class and message of what an operation failed with. */
    private static void emitError(Exception e) {
        Throwable top = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null
                ? e.getCause() : e;
        Throwable root = top;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        Json.emit("event", "error", "class", top.getClass().getSimpleName(), "message", String.valueOf(top.getMessage()),
                "rootClass", root.getClass().getSimpleName(), "rootMessage", String.valueOf(root.getMessage()));
    }

    private static Properties quickAdmin(Properties security) {
        Properties props = new Properties();
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000"); // must not exceed the above
        props.putAll(security);
        return props;
    }

    private static void createAcls(Properties security, List<String> specs) {
        List<AclBinding> bindings = new ArrayList<>();
        for (String spec : specs) {
            // principal is Type:name, so it spans two fields.
            String[] p = spec.split(":");
            bindings.add(new AclBinding(
                    new ResourcePattern(ResourceType.fromString(p[2]), p[3], PatternType.LITERAL),
                    new AccessControlEntry(p[0] + ":" + p[1], "*", AclOperation.fromString(p[4]),
                            AclPermissionType.fromString(p[5]))));
        }
        try (Admin admin = Admin.create(quickAdmin(security))) {
            admin.createAcls(bindings).all().get(30, TimeUnit.SECONDS);
            Json.emit("event", "created");
        } catch (Exception e) {
            emitError(e);
        }
    }

    private static void describeAcls(Properties security) {
        try (Admin admin = Admin.create(quickAdmin(security))) {
            List<String> rows = new ArrayList<>();
            for (AclBinding b : admin.describeAcls(AclBindingFilter.ANY).values().get(30, TimeUnit.SECONDS)) {
                rows.add(String.join(" ", b.entry().principal(), b.pattern().resourceType().name(),
                        b.pattern().name(), b.pattern().patternType().name(), b.entry().operation().name(),
                        b.entry().permissionType().name()));
            }
            rows.sort(null);
            Json.emit("event", "acls", "acls", rows);
        } catch (Exception e) {
            emitError(e);
        }
    }

    private static void createTopic(Properties security, String topic) {
        try (Admin admin = Admin.create(quickAdmin(security))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            Json.emit("event", "created");
        } catch (Exception e) {
            emitError(e);
        }
    }

    private static void produceOne(Properties security, String topic) {
        Properties props = producerProps(security);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "15000");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            RecordMetadata md = producer.send(new ProducerRecord<>(topic, 0, "k", "v")).get(30, TimeUnit.SECONDS);
            Json.emit("event", "produced", "offset", md.offset());
        } catch (Exception e) {
            emitError(e);
        }
    }

    private static Map<String, Double> counters(Map<MetricName, ? extends Metric> metrics) {
        Map<String, Double> out = new HashMap<>();
        for (Map.Entry<MetricName, ? extends Metric> e : metrics.entrySet()) {
            MetricName name = e.getKey();
            if (name.group().equals("consumer-metrics") && COUNTERS.contains(name.name())) {
                out.put(name.name(), ((Number) e.getValue().metricValue()).doubleValue());
            }
        }
        return out;
    }
}
