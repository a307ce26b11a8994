import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Walks a topic through the Java Admin client: createTopics (with configs), a duplicate create,
 * describeTopics, describeConfigs, incrementalAlterConfigs (SET and DELETE), deleteTopics, and
 * prints one line per step.
 *
 * <p>Args: bootstrap topic.
 */
public final class AdminOps {
    private AdminOps() {}

    private static final List<String> WATCHED =
            List.of("cleanup.policy", "min.compaction.lag.ms", "retention.ms", "segment.bytes");

    public static void main(String[] args) throws Exception {
        String topic = args[1];
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(props)) {
            NewTopic newTopic = new NewTopic(topic, 3, (short) 1)
                    .configs(Map.of("cleanup.policy", "compact", "min.compaction.lag.ms", "60000"));
            CreateTopicsResult created = admin.createTopics(List.of(newTopic));
            created.all().get(30, TimeUnit.SECONDS);
            Json.emit("event", "created", "partitions", created.numPartitions(topic).get(),
                    "replicationFactor", created.replicationFactor(topic).get());

            try {
                admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
                Json.emit("event", "duplicateCreate", "error", null);
            } catch (ExecutionException e) {
                Json.emit("event", "duplicateCreate", "error", e.getCause().getClass().getSimpleName());
            }

            TopicDescription description =
                    admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
            Json.emit("event", "describedTopic", "partitions", description.partitions().size(),
                    "internal", description.isInternal());

            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            emitConfig(admin, resource, "configBeforeAlter");

            Collection<AlterConfigOp> ops = List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("min.compaction.lag.ms", ""), AlterConfigOp.OpType.DELETE));
            admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get(30, TimeUnit.SECONDS);
            emitConfig(admin, resource, "configAfterAlter");

            admin.deleteTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            Set<String> names = admin.listTopics().names().get(30, TimeUnit.SECONDS);
            while (names.contains(topic) && System.nanoTime() < deadline) {
                Thread.sleep(100);
                names = admin.listTopics().names().get(30, TimeUnit.SECONDS);
            }
            Json.emit("event", "deleted", "stillListed", names.contains(topic));
        }
    }

    private static void emitConfig(Admin admin, ConfigResource resource, String event) throws Exception {
        Config config = admin.describeConfigs(List.of(resource)).all().get(30, TimeUnit.SECONDS).get(resource);
        List<Object> entries = new ArrayList<>();
        for (String name : WATCHED) {
            ConfigEntry e = config.get(name);
            entries.add(e == null ? Map.of("name", name)
                    : Map.of("name", name, "value", String.valueOf(e.value()), "source", e.source().name(),
                            "readOnly", e.isReadOnly(), "sensitive", e.isSensitive()));
        }
        Json.emit("event", event, "entries", entries, "count", config.entries().size());
    }
}
