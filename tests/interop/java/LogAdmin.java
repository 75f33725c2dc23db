import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DeleteRecordsOptions;
import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.DescribeProducersResult;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's Java Admin on a broker's logs: deleteRecords (then listOffsets EARLIEST, a consumer from the beginning,
 * errors above the high watermark and for an unknown partition), describeLogDirs / describeReplicaLogDirs,
 * describeProducers, and describeTopics (DescribeTopicPartitions with paging: a topic larger than one page).
 * args: brokerBootstrap topicPrefix.
 */
public final class LogAdmin {
    static final int RECORDS = 100;

    public static void main(String[] args) throws Exception {
        String brokers = args[0];
        String topic = args[1] + "-trim";
        String wide = args[1] + "-wide";
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 3), new NewTopic(wide, 30, (short) 1)))
                 .all().get(30, TimeUnit.SECONDS);
            TopicDescription described = ClientBasics.waitForLeaders(admin, topic);
            TopicPartition tp = new TopicPartition(topic, 0);
            produce(brokers, topic);
            Checks.check("delete_records", () -> {
                DeletedRecords deleted = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(60)))
                        .lowWatermarks().get(tp).get(30, TimeUnit.SECONDS);
                Checks.require(deleted.lowWatermark() == 60, "low watermark " + deleted.lowWatermark());
                return deleted.lowWatermark();
            });
            Checks.check("list_offsets_earliest_after_delete", () -> {
                long earliest = admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp)
                        .get(30, TimeUnit.SECONDS).offset();
                Checks.require(earliest == 60, "earliest " + earliest);
                return earliest;
            });
            Checks.check("consume_from_beginning_starts_at_the_new_start", () -> {
                long first = firstOffset(brokers, tp);
                Checks.require(first == 60, "first offset " + first);
                return first;
            });
            Checks.check("delete_records_above_the_high_watermark", () -> expectFailure(
                    admin, tp, RECORDS + 5, OffsetOutOfRangeException.class));
            // kafka-clients retries a partition its Metadata lookup does not find (UNKNOWN_TOPIC_OR_PARTITION is
            // retriable) until the call's timeout, whatever the broker: the answer a Kafka broker gives.
            Checks.check("delete_records_unknown_topic_times_out", () -> {
                try {
                    admin.deleteRecords(Map.of(new TopicPartition(topic + "-nope", 0), RecordsToDelete.beforeOffset(1)),
                                        new DeleteRecordsOptions().timeoutMs(3000)).all().get(30, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    Checks.require(e.getCause() instanceof org.apache.kafka.common.errors.TimeoutException,
                                   "failed with " + e.getCause());
                    return e.getCause().getClass().getSimpleName();
                }
                throw new IllegalStateException("deleteRecords of an unknown topic succeeded");
            });
            Checks.check("describe_log_dirs", () -> describeLogDirs(admin, described, tp));
            Checks.check("describe_replica_log_dirs", () -> {
                TopicPartitionReplica replica = new TopicPartitionReplica(topic, 0, described.partitions().get(0).leader().id());
                DescribeReplicaLogDirsResult.ReplicaLogDirInfo info = admin.describeReplicaLogDirs(List.of(replica))
                        .all().get(30, TimeUnit.SECONDS).get(replica);
                Checks.require(info.getCurrentReplicaLogDir() != null, "no current dir: " + info);
                return info.getCurrentReplicaLogDir();
            });
            Checks.check("describe_producers", () -> {
                DescribeProducersResult.PartitionProducerState state = admin.describeProducers(List.of(tp))
                        .partitionResult(tp).get(30, TimeUnit.SECONDS);
                List<ProducerState> active = state.activeProducers();
                Checks.require(active.size() == 1 && active.get(0).lastSequence() == RECORDS - 1, "producers " + active);
                return Map.of("producerId", active.get(0).producerId(), "lastSequence", active.get(0).lastSequence());
            });
            Checks.check("describe_topics_paged", () -> {
                // kafka-clients asks DescribeTopicPartitions with ResponsePartitionLimit 2000; the broker's
                // max.request.partition.size.limit (set low by the test) makes it page through the cursor.
                TopicDescription many = admin.describeTopics(List.of(wide, topic)).allTopicNames()
                        .get(30, TimeUnit.SECONDS).get(wide);
                Checks.require(many.partitions().size() == 30, "partitions " + many.partitions().size());
                for (int i = 0; i < 30; i++) {
                    TopicPartitionInfo p = many.partitions().get(i);
                    Checks.require(p.partition() == i && p.replicas().size() == 1, "partition " + p);
                }
                return many.partitions().size();
            });
        }
    }

    static void produce(String brokers, String topic) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        try (KafkaProducer<String, String> producer =
                     new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < RECORDS; i++) {
                producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)).get(30, TimeUnit.SECONDS);
            }
        }
    }

    static long firstOffset(String brokers, TopicPartition tp) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaConsumer<String, String> consumer =
                     new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            consumer.assign(List.of(tp));
            consumer.seek(tp, 5);  // below the log start: OFFSET_OUT_OF_RANGE, then the reset policy
            long deadline = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    return record.offset();
                }
            }
        }
        return -1;
    }

    static Object expectFailure(Admin admin, TopicPartition tp, long offset, Class<?> expected) throws Exception {
        try {
            admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(offset))).lowWatermarks().get(tp)
                 .get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            Checks.require(expected.isInstance(e.getCause()), "failed with " + e.getCause());
            return e.getCause().getClass().getSimpleName();
        }
        throw new IllegalStateException("deleteRecords to " + offset + " succeeded");
    }

    static Object describeLogDirs(Admin admin, TopicDescription described, TopicPartition tp) throws Exception {
        List<Integer> ids = new ArrayList<>();
        for (org.apache.kafka.common.Node node : described.partitions().get(0).replicas()) {
            ids.add(node.id());
        }
        Map<Integer, Map<String, LogDirDescription>> all = admin.describeLogDirs(ids).allDescriptions()
                .get(30, TimeUnit.SECONDS);
        Map<String, Object> sizes = new HashMap<>();
        for (int id : ids) {
            Map<String, LogDirDescription> dirs = all.get(id);
            Checks.require(dirs != null && dirs.size() == 1, "broker " + id + " dirs " + dirs);
            LogDirDescription dir = dirs.values().iterator().next();
            Checks.require(dir.error() == null, "error " + dir.error());
            Checks.require(dir.totalBytes().isPresent() && dir.usableBytes().isPresent(), "no volume sizes");
            ReplicaInfo info = dir.replicaInfos().get(tp);
            Checks.require(info != null && info.size() > 0 && !info.isFuture(), "replica " + info);
            sizes.put(String.valueOf(id), info.size());
        }
        return sizes;
    }
}
