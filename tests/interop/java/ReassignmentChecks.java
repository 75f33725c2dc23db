import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's Admin.alterPartitionReassignments / listPartitionReassignments against pykraft (KIP-455).
 * Args: brokerBootstrap topicPrefix brokerA brokerB brokerC phase.
 * phase "move": a partition on A,B moves to B,C while its records stay readable; the errors Kafka's controller
 * gives (unknown topic and partition, an unregistered broker, a repeated broker, cancelling nothing).
 * phase "pending" (the caller created topicPrefix-pending on A,B, then paused broker C): a move to C stays listed as
 * ongoing, then is cancelled.
 */
public final class ReassignmentChecks {
    public static void main(String[] args) throws Exception {
        String brokers = args[0];
        int a = Integer.parseInt(args[2]), b = Integer.parseInt(args[3]), c = Integer.parseInt(args[4]);
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        // A paused broker ("pending") accepts connections and never answers: give up on it quickly, try another.
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        try (Admin admin = Admin.create(props)) {
            if (args[5].equals("move")) {
                move(admin, brokers, args[1] + "-moved", a, b, c);
            } else {
                pending(admin, args[1] + "-pending", a, b, c);
            }
        }
    }

    static void move(Admin admin, String brokers, String topic, int a, int b, int c) throws Exception {
        TopicPartition p0 = new TopicPartition(topic, 0);
        admin.createTopics(List.of(new NewTopic(topic, Map.of(0, List.of(a, b))))).all().get(30, TimeUnit.SECONDS);
        produce(brokers, topic, 20);
        Checks.check("move_completes", () -> {
            admin.alterPartitionReassignments(Map.of(p0, Optional.of(new NewPartitionReassignment(List.of(b, c)))))
                 .all().get(30, TimeUnit.SECONDS);
            long deadline = System.currentTimeMillis() + 90_000;
            List<Integer> replicas = List.of();
            while (System.currentTimeMillis() < deadline) {
                replicas = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic)
                                .partitions().get(0).replicas().stream().map(Node::id).collect(Collectors.toList());
                if (replicas.equals(List.of(b, c)) && admin.listPartitionReassignments().reassignments()
                        .get(30, TimeUnit.SECONDS).isEmpty()) {
                    return replicas;
                }
                Thread.sleep(200);
            }
            throw new IllegalStateException("replicas still " + replicas);
        });
        Checks.check("records_readable_after_move", () -> {
            int seen = consume(brokers, p0, 20);
            Checks.require(seen == 20, "read " + seen + " of 20 records");
            return seen;
        });
        Checks.check("errors", () -> {
            List<String> errors = new ArrayList<>();
            errors.add(error(admin, new TopicPartition(topic + "-nope", 0), Optional.of(List.of(a))));
            errors.add(error(admin, new TopicPartition(topic, 7), Optional.of(List.of(a))));
            errors.add(error(admin, p0, Optional.of(List.of(a, 999))));
            errors.add(error(admin, p0, Optional.of(List.of(a, a))));
            errors.add(error(admin, p0, Optional.empty()));
            return errors;
        });
        Checks.check("list_named_partition_not_moving", () -> {
            Map<TopicPartition, PartitionReassignment> listed = admin.listPartitionReassignments(Set.of(p0))
                    .reassignments().get(30, TimeUnit.SECONDS);
            Checks.require(listed.isEmpty(), "listed " + listed);
            return listed.size();
        });
    }

    static void pending(Admin admin, String topic, int a, int b, int c) throws Exception {
        TopicPartition p0 = new TopicPartition(topic, 0);  // created on A,B by the caller before pausing C
        Checks.check("pending_listed", () -> {
            admin.alterPartitionReassignments(Map.of(p0, Optional.of(new NewPartitionReassignment(List.of(a, c)))))
                 .all().get(60, TimeUnit.SECONDS);
            PartitionReassignment r = admin.listPartitionReassignments().reassignments().get(60, TimeUnit.SECONDS)
                                           .get(p0);
            Checks.require(r != null, "not listed");
            return Map.of("replicas", r.replicas(), "adding", r.addingReplicas(), "removing", r.removingReplicas());
        });
        Checks.check("pending_cancelled", () -> {
            admin.alterPartitionReassignments(Map.of(p0, Optional.empty())).all().get(60, TimeUnit.SECONDS);
            Map<TopicPartition, PartitionReassignment> left = admin.listPartitionReassignments().reassignments()
                                                                  .get(60, TimeUnit.SECONDS);
            Checks.require(left.isEmpty(), "still listed: " + left);
            // A broker's metadata follows the controller's commit a moment later, as in Kafka.
            long deadline = System.currentTimeMillis() + 60_000;
            List<Integer> replicas = List.of();
            while (System.currentTimeMillis() < deadline) {
                replicas = admin.describeTopics(List.of(topic)).allTopicNames().get(60, TimeUnit.SECONDS).get(topic)
                                .partitions().get(0).replicas().stream().map(Node::id).collect(Collectors.toList());
                if (!replicas.contains(c)) {
                    return replicas;
                }
                Thread.sleep(200);
            }
            throw new IllegalStateException("replicas still " + replicas);
        });
    }

    static String error(Admin admin, TopicPartition tp, Optional<List<Integer>> replicas) throws Exception {
        try {
            admin.alterPartitionReassignments(Map.of(tp, replicas.map(NewPartitionReassignment::new)))
                 .all().get(30, TimeUnit.SECONDS);
            return "none";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        }
    }

    static void produce(String brokers, String topic, int count) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<String, String> producer =
                     new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)).get(30, TimeUnit.SECONDS);
            }
        }
    }

    static int consume(String brokers, TopicPartition tp, int expected) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaConsumer<String, String> consumer =
                     new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            while (seen < expected && System.currentTimeMillis() < deadline) {
                seen += consumer.poll(Duration.ofMillis(500)).count();
            }
            return seen;
        }
    }
}
