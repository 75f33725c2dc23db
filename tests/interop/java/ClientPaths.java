import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The producer and consumer paths beyond the basics (args: brokerBootstrap topicPrefix): acks 0 and 1 without
 * idempotence, partitionsFor, a record over max.message.bytes, offsetsForTimes / beginningOffsets / endOffsets,
 * seek, read_committed with no transactions (the LSO is the HWM), static membership, the cooperative-sticky
 * assignor's incremental rebalance between two members, pause/resume.
 */
public final class ClientPaths {
    static String brokers;

    public static void main(String[] args) throws Exception {
        brokers = args[0];
        String topic = args[1] + "-paths";
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(new NewTopic(topic, 4, (short) 3).configs(Map.of("max.message.bytes", "100000"))))
                 .all().get(30, TimeUnit.SECONDS);
        }
        long before = System.currentTimeMillis();
        Checks.check("produce_acks_0_and_1", () -> {
            int sent = 0;
            for (String acks : new String[] {"0", "1"}) {
                try (KafkaProducer<String, String> producer = producer(Map.of(ProducerConfig.ACKS_CONFIG, acks,
                        ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false"))) {
                    for (int i = 0; i < 50; i++) {
                        producer.send(new ProducerRecord<>(topic, i % 4, "k", "acks" + acks + "-" + i)).get(30, TimeUnit.SECONDS);
                        sent++;
                    }
                }
            }
            return Map.of("sent", sent);
        });
        Checks.check("partitions_for", () -> {
            try (KafkaProducer<String, String> producer = producer(Map.of())) {
                List<PartitionInfo> partitions = producer.partitionsFor(topic);
                Checks.require(partitions.size() == 4, "partitions " + partitions);
                for (PartitionInfo info : partitions) {
                    Checks.require(info.leader() != null && info.replicas().length == 3 && info.inSyncReplicas().length == 3,
                            "partition " + info);
                }
                return null;
            }
        });
        Checks.check("record_too_large", () -> {
            try (KafkaProducer<String, String> producer = producer(Map.of(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, "1000000"))) {
                producer.send(new ProducerRecord<>(topic, 0, "big", "x".repeat(200_000))).get(30, TimeUnit.SECONDS);
                throw new IllegalStateException("a 200 kB record was accepted over max.message.bytes=100000");
            } catch (java.util.concurrent.ExecutionException e) {
                Checks.require(e.getCause() instanceof RecordTooLargeException, "got " + e.getCause());
                return e.getCause().getClass().getSimpleName();
            }
        });
        Checks.check("offsets_for_times_and_ends", () -> {
            try (KafkaConsumer<String, String> consumer = consumer(Map.of())) {
                List<TopicPartition> partitions = new ArrayList<>();
                Map<TopicPartition, Long> times = new HashMap<>();
                for (int p = 0; p < 4; p++) {
                    partitions.add(new TopicPartition(topic, p));
                    times.put(new TopicPartition(topic, p), before);
                }
                Map<TopicPartition, Long> begin = consumer.beginningOffsets(partitions);
                Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
                Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(times);
                long total = 0;
                for (TopicPartition partition : partitions) {
                    Checks.require(begin.get(partition) == 0, "beginning " + begin);
                    total += end.get(partition);
                    OffsetAndTimestamp first = found.get(partition);
                    Checks.require(first != null && first.offset() == 0 && first.timestamp() >= before,
                            partition + " offsetsForTimes " + first);
                }
                Checks.require(total == 100, "end offsets sum to " + total);
                return Map.of("end", total);
            }
        });
        Checks.check("seek_and_read_committed", () -> {
            try (KafkaConsumer<String, String> consumer = consumer(Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
                TopicPartition p1 = new TopicPartition(topic, 1);
                long end = consumer.endOffsets(List.of(p1)).get(p1);  // 26: partition 1 got 13 records per acks
                consumer.assign(List.of(p1));
                consumer.seek(p1, 10);
                List<String> values = new ArrayList<>();
                long deadline = System.currentTimeMillis() + 30_000;
                while (values.size() < end - 10 && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(300))) {
                        Checks.require(record.offset() >= 10, "read offset " + record.offset() + " before the seek");
                        values.add(record.value());
                    }
                }
                Checks.require(end == 26 && values.size() == end - 10, "read " + values.size() + " after the seek to 10 of " + end);
                Checks.require(consumer.position(p1) == end, "position " + consumer.position(p1));
                return null;
            }
        });
        Checks.check("static_member_rejoins_without_rebalance", () -> staticMember(topic));
        Checks.check("cooperative_sticky_incremental_rebalance", () -> cooperative(topic));
    }

    static KafkaProducer<String, String> producer(Map<String, String> extra) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.putAll(extra);
        return new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
    }

    static KafkaConsumer<String, String> consumer(Map<String, String> extra) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.putAll(extra);
        return new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
    }

    /** A member with group.instance.id leaves (close without LeaveGroup, as a static member does) and comes back
     * within the session timeout: it gets the same partitions in the same generation (KIP-345). */
    static Object staticMember(String topic) {
        Map<String, String> props = Map.of(ConsumerConfig.GROUP_ID_CONFIG, topic + "-static",
                ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "instance-1",
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "30000");
        Set<TopicPartition> first = assignedAfterJoin(props, topic);
        Set<TopicPartition> second = assignedAfterJoin(props, topic);
        Checks.require(first.size() == 4 && first.equals(second), "first " + first + " then " + second);
        return null;
    }

    static Set<TopicPartition> assignedAfterJoin(Map<String, String> props, String topic) {
        try (KafkaConsumer<String, String> consumer = consumer(props)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (consumer.assignment().isEmpty() && System.currentTimeMillis() < deadline) {
                consumer.poll(Duration.ofMillis(200));
            }
            return new HashSet<>(consumer.assignment());
        }
    }

    /** Two cooperative-sticky members: the first keeps the partitions it still owns while the second joins
     * (no partition revoked that is not moved). */
    static Object cooperative(String topic) {
        Map<String, String> props = Map.of(ConsumerConfig.GROUP_ID_CONFIG, topic + "-coop",
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
        List<TopicPartition> revoked = new ArrayList<>();
        try (KafkaConsumer<String, String> one = consumer(props); KafkaConsumer<String, String> two = consumer(props)) {
            one.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    revoked.addAll(partitions);
                }

                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                }
            });
            long deadline = System.currentTimeMillis() + 60_000;
            while (one.assignment().size() < 4 && System.currentTimeMillis() < deadline) {
                one.poll(Duration.ofMillis(200));
            }
            Checks.require(one.assignment().size() == 4, "one alone owns " + one.assignment());
            two.subscribe(List.of(topic));
            while ((one.assignment().size() != 2 || two.assignment().size() != 2) && System.currentTimeMillis() < deadline) {
                one.poll(Duration.ofMillis(100));
                two.poll(Duration.ofMillis(100));
            }
            Checks.require(one.assignment().size() == 2 && two.assignment().size() == 2,
                    "assignments " + one.assignment() + " / " + two.assignment());
            Checks.require(revoked.size() == 2, "the first member had " + revoked + " revoked (only the moved two)");
            return Map.of("revoked", revoked.size());
        }
    }
}
