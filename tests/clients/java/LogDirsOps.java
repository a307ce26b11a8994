import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult.ReplicaLogDirInfo;
import org.apache.kafka.common.TopicPartitionReplica;

/**
 * Moves replicas between a broker's log dirs with the Java Admin client (alterReplicaLogDirs,
 * KIP-113) and watches the move with describeReplicaLogDirs.
 *
 * <p>Args: {@code bootstrap alter (topic partition broker dir)...}: one request for every replica
 * given, one line per replica with the error class (null when it succeeded).
 *
 * <p>{@code bootstrap wait topic partition broker dir timeoutSeconds}: polls describeReplicaLogDirs
 * until the replica's current dir is {@code dir} and it has no future replica; one line at the end
 * with the number of polls that saw a future replica (in {@code dir}), the largest future lag seen
 * and the final current dir.
 */
public final class LogDirsOps {
    private LogDirsOps() {}

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(props)) {
            switch (args[1]) {
                case "alter" -> alter(admin, args);
                case "wait" -> waitMoved(admin, args);
                default -> throw new IllegalArgumentException("unknown command " + args[1]);
            }
        }
    }

    private static TopicPartitionReplica replica(String[] args, int at) {
        return new TopicPartitionReplica(args[at], Integer.parseInt(args[at + 1]), Integer.parseInt(args[at + 2]));
    }

    private static void alter(Admin admin, String[] args) throws Exception {
        Map<TopicPartitionReplica, String> moves = new java.util.LinkedHashMap<>();
        for (int i = 2; i + 3 < args.length; i += 4) {
            moves.put(replica(args, i), args[i + 3]);
        }
        var values = admin.alterReplicaLogDirs(moves).values();
        for (var e : moves.entrySet()) {
            String error = null;
            try {
                values.get(e.getKey()).get(30, TimeUnit.SECONDS);
            } catch (ExecutionException ex) {
                error = ex.getCause().getClass().getSimpleName();
            }
            Json.emit("event", "altered", "topic", e.getKey().topic(), "partition", e.getKey().partition(),
                    "dir", e.getValue(), "error", error);
        }
    }

    private static void waitMoved(Admin admin, String[] args) throws Exception {
        TopicPartitionReplica replica = replica(args, 2);
        String dir = args[5];
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[6]));
        int polls = 0;
        int sawFuture = 0;
        long maxFutureLag = -1;
        ReplicaLogDirInfo info;
        while (true) {
            polls++;
            info = admin.describeReplicaLogDirs(List.of(replica)).all().get(30, TimeUnit.SECONDS).get(replica);
            if (info.getFutureReplicaLogDir() != null) {
                if (info.getFutureReplicaLogDir().equals(dir)) {
                    sawFuture++;
                }
                maxFutureLag = Math.max(maxFutureLag, info.getFutureReplicaOffsetLag());
            }
            boolean done = dir.equals(info.getCurrentReplicaLogDir()) && info.getFutureReplicaLogDir() == null;
            if (done || System.nanoTime() > deadline) {
                break;
            }
            Thread.sleep(50);
        }
        Json.emit("event", "waited", "polls", polls, "sawFuture", sawFuture, "maxFutureLag", maxFutureLag,
                "currentDir", info.getCurrentReplicaLogDir(), "futureDir", info.getFutureReplicaLogDir(),
                "currentLag", info.getCurrentReplicaOffsetLag());
    }
}
