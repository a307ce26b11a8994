import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

/**
 * Creates, lists and deletes ACLs with the Java Admin client (CreateAcls, DescribeAcls,
 * DeleteAcls) and prints one JSON line per ACL listed or deleted.
 *
 * <p>Args: bootstrap command [acl ...], where command is create, list or delete and each acl is
 * resourceType:patternType:name:principal:operation:permission, e.g.
 * TOPIC:PREFIXED:orders-:User:alice:READ:ALLOW (the principal has the form Type:name).
 */
public final class AclOps {
    private AclOps() {}

    private static AclBinding parse(String spec) {
        String[] f = spec.split(":");
        if (f.length != 7) {
            throw new IllegalArgumentException("bad acl " + spec);
        }
        return new AclBinding(
                new ResourcePattern(ResourceType.fromString(f[0]), f[2], PatternType.fromString(f[1])),
                new AccessControlEntry(f[3] + ":" + f[4], "*", AclOperation.fromString(f[5]),
                        AclPermissionType.fromString(f[6])));
    }

    private static void emit(String event, AclBinding b) {
        Json.emit("event", event,
                "resource_type", b.pattern().resourceType().name(),
                "pattern_type", b.pattern().patternType().name(),
                "name", b.pattern().name(),
                "principal", b.entry().principal(),
                "host", b.entry().host(),
                "operation", b.entry().operation().name(),
                "permission", b.entry().permissionType().name());
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        List<AclBinding> acls = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            acls.add(parse(args[i]));
        }
        try (Admin admin = Admin.create(props)) {
            switch (args[1]) {
                case "create":
                    admin.createAcls(acls).all().get();
                    Json.emit("event", "created", "count", acls.size());
                    break;
                case "list":
                    for (AclBinding b : admin.describeAcls(AclBindingFilter.ANY).values().get()) {
                        emit("acl", b);
                    }
                    break;
                case "delete":
                    List<AclBindingFilter> filters = new ArrayList<>();
                    for (AclBinding b : acls) {
                        filters.add(new AclBindingFilter(
                                new ResourcePatternFilter(b.pattern().resourceType(), b.pattern().name(),
                                        b.pattern().patternType()),
                                new AccessControlEntryFilter(b.entry().principal(), null,
                                        b.entry().operation(), b.entry().permissionType())));
                    }
                    Collection<AclBinding> deleted = admin.deleteAcls(filters).all().get();
                    for (AclBinding b : deleted) {
                        emit("deleted", b);
                    }
                    break;
                default:
                    throw new IllegalArgumentException("unknown command " + args[1]);
            }
        }
    }
}
