import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * Quorum reassignment as KIP-642 designs it, through Kafka's own Admin: alterPartitionReassignments naming
 * __cluster_metadata-0 with the target voter ids, listPartitionReassignments, describeMetadataQuorum.
 * Arguments: the brokers' bootstrap addresses, the target ids (comma-separated), an unknown id and a
 * broker-only id. One check line per step (Checks.java).
 */
public final class QuorumReassign {
    private static final TopicPartition METADATA = new TopicPartition("__cluster_metadata", 0);

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        // Brokers: Kafka's Admin refuses these two APIs over bootstrap.controllers; a broker forwards them.
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        List<Integer> target = ids(args[1]);
        int unknown = Integer.parseInt(args[2]);
        int broker = Integer.parseInt(args[3]);
        try (Admin admin = Admin.create(props)) {
            Checks.check("nothing_listed_before", () -> listed(admin));
            Checks.check("unknown_node_refused", () -> refused(admin, List.of(target.get(0), unknown)));
            Checks.check("broker_node_refused", () -> refused(admin, List.of(target.get(0), broker)));
            Checks.check("cancel_without_reassignment", () -> {
                try {
                    admin.alterPartitionReassignments(Map.of(METADATA, Optional.empty())).all().get();
                } catch (ExecutionException e) {
                    return e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
                }
                throw new IllegalStateException("a cancellation with nothing to cancel was accepted");
            });
            Checks.check("reassign_to_target", () -> {
                admin.alterPartitionReassignments(
                        Map.of(METADATA, Optional.of(new NewPartitionReassignment(target)))).all().get();
                return target;
            });
            Checks.check("quorum_is_the_target", () -> {
                QuorumInfo quorum = admin.describeMetadataQuorum().quorumInfo().get();
                Set<Integer> voters = new TreeSet<>();
                quorum.voters().forEach(v -> voters.add(v.replicaId()));
                Checks.require(voters.equals(new TreeSet<>(target)), "voters " + voters + ", not " + target);
                Checks.require(target.contains(quorum.leaderId()), "leader " + quorum.leaderId());
                return Map.of("voters", voters, "leader", quorum.leaderId());
            });
            Checks.check("nothing_listed_after", () -> listed(admin));
        }
    }

    private static List<Integer> ids(String text) {
        List<Integer> out = new java.util.ArrayList<>();
        for (String part : text.split(",")) {
            out.add(Integer.parseInt(part.trim()));
        }
        return out;
    }

    private static Object listed(Admin admin) throws Exception {
        Map<TopicPartition, PartitionReassignment> found =
                admin.listPartitionReassignments(Set.of(METADATA)).reassignments().get();
        Checks.require(found.isEmpty(), "a reassignment is listed: " + found);
        return found.size();
    }

    private static Object refused(Admin admin, List<Integer> replicas) throws Exception {
        try {
            admin.alterPartitionReassignments(
                    Map.of(METADATA, Optional.of(new NewPartitionReassignment(replicas)))).all().get();
        } catch (ExecutionException e) {
            String name = e.getCause().getClass().getSimpleName();
            Checks.require(name.equals("InvalidReplicaAssignmentException"), "refused with " + name);
            return name + ": " + e.getCause().getMessage();
        }
        throw new IllegalStateException("target " + replicas + " was accepted");
    }
}
