import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;

/**
 * Drives leadership admin calls through the Java Admin client and prints one JSON line per
 * partition.
 *
 * <p>Args: {@code elect bootstrap topic partitions} (electLeaders PREFERRED on partitions
 * 0..n-1; prints each partition's error class or null), {@code electAll bootstrap} (electLeaders
 * PREFERRED on every partition), {@code reassign bootstrap topic partition b1,b2,..} (or
 * {@code cancel} instead of the list), {@code list bootstrap} (listPartitionReassignments),
 * {@code reassignAndList ...} (reassign's arguments; lists right after the change).
 */
public final class LeadershipOps {
    private LeadershipOps() {}

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        try (Admin admin = Admin.create(props)) {
            switch (args[0]) {
                case "elect" -> {
                    Set<TopicPartition> tps = new HashSet<>();
                    for (int p = 0; p < Integer.parseInt(args[3]); p++) {
                        tps.add(new TopicPartition(args[2], p));
                    }
                    emitElection(admin.electLeaders(ElectionType.PREFERRED, tps).partitions()
                            .get(60, TimeUnit.SECONDS));
                }
                case "electAll" -> emitElection(admin.electLeaders(ElectionType.PREFERRED, null).partitions()
                        .get(60, TimeUnit.SECONDS));
                case "reassign" -> reassign(admin, args);
                case "reassignAndList" -> {
                    reassign(admin, args);
                    list(admin);
                }
                case "list" -> list(admin);
                default -> throw new IllegalArgumentException("unknown command " + args[0]);
            }
        }
    }

    private static void reassign(Admin admin, String[] args) throws Exception {
        TopicPartition tp = new TopicPartition(args[2], Integer.parseInt(args[3]));
        Optional<NewPartitionReassignment> target = Optional.empty();
        if (!args[4].equals("cancel")) {
            List<Integer> replicas = new ArrayList<>();
            for (String id : args[4].split(",")) {
                replicas.add(Integer.parseInt(id));
            }
            target = Optional.of(new NewPartitionReassignment(replicas));
        }
        String error = null;
        try {
            admin.alterPartitionReassignments(Map.of(tp, target)).all().get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            error = e.getCause().getClass().getSimpleName();
        }
        Json.emit("event", "reassign", "partition", tp.partition(), "error", error);
    }

    private static void list(Admin admin) throws Exception {
        Map<TopicPartition, PartitionReassignment> ongoing =
                admin.listPartitionReassignments().reassignments().get(60, TimeUnit.SECONDS);
        for (Map.Entry<TopicPartition, PartitionReassignment> e : ongoing.entrySet()) {
            Json.emit("event", "ongoing", "topic", e.getKey().topic(), "partition", e.getKey().partition(),
                    "replicas", e.getValue().replicas(), "adding", e.getValue().addingReplicas(), "removing",
                    e.getValue().removingReplicas());
        }
        Json.emit("event", "listed", "count", ongoing.size());
    }
    private static void emitElection(Map<TopicPartition, Optional<Throwable>> results) {
        for (Map.Entry<TopicPartition, Optional<Throwable>> e : results.entrySet()) {
            Json.emit("event", "elected", "topic", e.getKey().topic(), "partition", e.getKey().partition(),
                    "error", e.getValue().map(t -> t.getClass().getSimpleName()).orElse(null));
        }
        Json.emit("event", "electedAll", "count", results.size());
    }
}
