import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * What most Kafka applications do with Kafka's own Java client, against a pykraft cluster:
 * args: brokerBootstrap controllerBootstrap topicPrefix.
 * Admin from a broker and from the controllers, topics and their configs, idempotent produce with every codec,
 * a consumer group reading each record exactly once with commitSync, group admin, offsets, a topic's deletion.
 * The basics topic is kept: the caller reads its segments with Kafka's parser afterwards (ParseLogs).
 */
public final class ClientBasics {
    static final int RECORDS_PER_CODEC = 200;
    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};

    public static void main(String[] args) throws Exception {
        String brokers = args[0];
        String controllers = args[1];
        String prefix = args[2];
        String topic = prefix + "-basics";
        String group = prefix + "-group";
        try (Admin admin = Admin.create(adminProps(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers));
             Admin controllerAdmin = Admin.create(adminProps(AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG, controllers))) {
            admin(admin, controllerAdmin, topic);
            Set<String> produced = produce(brokers, topic);
            consume(brokers, topic, group, produced);
            groupAdmin(admin, topic, group, produced.size());
            Checks.check("create_and_delete_topic", () -> {
                String doomed = prefix + "-doomed";
                admin.createTopics(List.of(new NewTopic(doomed, 1, (short) 3))).all().get(30, TimeUnit.SECONDS);
                admin.deleteTopics(List.of(doomed)).all().get(30, TimeUnit.SECONDS);
                long deadline = System.currentTimeMillis() + 30_000;
                while (admin.listTopics().names().get(30, TimeUnit.SECONDS).contains(doomed)) {
                    Checks.require(System.currentTimeMillis() < deadline, doomed + " still listed");
                    Thread.sleep(200);
                }
                return null;
            });
        }
    }

    static Properties adminProps(String key, String bootstrap) {
        Properties props = new Properties();
        props.put(key, bootstrap);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        return props;
    }

    static void admin(Admin admin, Admin controllerAdmin, String topic) {
        Checks.check("describe_cluster_from_broker", () -> {
            DescribeClusterResult cluster = admin.describeCluster();
            int nodes = cluster.nodes().get(30, TimeUnit.SECONDS).size();
            Checks.require(nodes >= 1, "no broker listed");
            return Map.of("nodes", nodes, "cluster_id", cluster.clusterId().get());
        });
        Checks.check("describe_cluster_from_controller", () -> {
            int nodes = controllerAdmin.describeCluster().nodes().get(30, TimeUnit.SECONDS).size();
            Checks.require(nodes >= 1, "no controller listed");
            return Map.of("nodes", nodes);
        });
        Checks.check("describe_metadata_quorum", () -> {
            QuorumInfo quorum = controllerAdmin.describeMetadataQuorum().quorumInfo().get(30, TimeUnit.SECONDS);
            Checks.require(quorum.leaderId() >= 0 && !quorum.voters().isEmpty(), "no leader: " + quorum);
            return Map.of("leader", quorum.leaderId(), "voters", quorum.voters().size());
        });
        Checks.check("describe_features", () -> {
            FeatureMetadata features = controllerAdmin.describeFeatures().featureMetadata().get(30, TimeUnit.SECONDS);
            Checks.require(features.finalizedFeatures().containsKey("metadata.version"), "no metadata.version: " + features);
            return String.valueOf(features.finalizedFeatures().keySet());
        });
        Checks.check("create_topic", () -> {
            NewTopic newTopic = new NewTopic(topic, 3, (short) 3).configs(Map.of("min.insync.replicas", "2"));
            admin.createTopics(List.of(newTopic)).all().get(30, TimeUnit.SECONDS);
            return null;
        });
        Checks.check("describe_topic", () -> {
            TopicDescription description = waitForLeaders(admin, topic);
            return Map.of("partitions", description.partitions().size());
        });
        Checks.check("describe_topic_configs", () -> {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config config = admin.describeConfigs(List.of(resource)).all().get(30, TimeUnit.SECONDS).get(resource);
            String minIsr = config.get("min.insync.replicas").value();
            Checks.require("2".equals(minIsr), "min.insync.replicas=" + minIsr);
            return null;
        });
    }

    /** The topic once every partition has a leader and a full ISR. A broker learns a new topic from the metadata
     * log a moment after the controller committed it, so UnknownTopicOrPartition is retried, as with Kafka. */
    static TopicDescription waitForLeaders(Admin admin, String topic) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            TopicDescription description = null;
            try {
                description = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
            } catch (java.util.concurrent.ExecutionException e) {
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException)
                        || System.currentTimeMillis() > deadline) {
                    throw e;
                }
            }
            boolean led = description != null
                    && description.partitions().stream().allMatch(p -> p.leader() != null && p.isr().size() == 3);
            if (led || System.currentTimeMillis() > deadline) {
                Checks.require(led, "partitions without a leader or a full ISR: " + description);
                return description;
            }
            Thread.sleep(200);
        }
    }

    static Set<String> produce(String brokers, String topic) {
        Set<String> produced = new HashSet<>();
        for (String codec : CODECS) {
            Checks.check("produce_idempotent_" + codec, () -> {
                Properties props = new Properties();
                props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
                props.put(ProducerConfig.ACKS_CONFIG, "all");
                props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
                props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
                props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
                props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
                try (KafkaProducer<String, String> producer =
                             new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
                    List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
                    for (int i = 0; i < RECORDS_PER_CODEC; i++) {
                        String value = codec + "-" + i;
                        RecordHeaders headers = new RecordHeaders();
                        headers.add("codec", codec.getBytes());
                        sent.add(producer.send(new ProducerRecord<>(topic, null, "k" + i, value, headers)));
                    }
                    for (int i = 0; i < sent.size(); i++) {
                        RecordMetadata metadata = sent.get(i).get(60, TimeUnit.SECONDS);
                        Checks.require(metadata.offset() >= 0, "no offset for " + codec + "-" + i);
                        produced.add(codec + "-" + i);
                    }
                }
                return Map.of("acknowledged", RECORDS_PER_CODEC);
            });
        }
        return produced;
    }

    static void consume(String brokers, String topic, String group, Set<String> produced) {
        Checks.check("consume_group_exactly_once", () -> {
            Properties props = new Properties();
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            Map<String, Integer> seen = new HashMap<>();
            boolean headersKept = true;
            try (KafkaConsumer<String, String> consumer =
                         new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
                consumer.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + 90_000;
                while (seen.size() < produced.size() && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                        seen.merge(record.value(), 1, Integer::sum);
                        String codec = record.value().substring(0, record.value().indexOf('-'));
                        headersKept &= record.headers().lastHeader("codec") != null
                                && new String(record.headers().lastHeader("codec").value()).equals(codec);
                    }
                    consumer.commitSync();
                }
            }
            Checks.require(seen.keySet().equals(produced), "consumed " + seen.size() + " distinct of " + produced.size());
            Checks.require(seen.values().stream().allMatch(n -> n == 1), "a record was consumed twice");
            Checks.require(headersKept, "a record's header was lost or changed");
            return Map.of("consumed", seen.size());
        });
    }

    static void groupAdmin(Admin admin, String topic, String group, int produced) {
        Checks.check("list_groups", () -> {
            boolean listed = admin.listConsumerGroups().all().get(30, TimeUnit.SECONDS).stream()
                    .anyMatch(g -> g.groupId().equals(group));
            Checks.require(listed, group + " not listed");
            return null;
        });
        Checks.check("describe_group", () -> {
            ConsumerGroupDescription description = admin.describeConsumerGroups(List.of(group)).all()
                    .get(30, TimeUnit.SECONDS).get(group);
            return Map.of("state", String.valueOf(description.state()), "members", description.members().size());
        });
        Checks.check("group_offsets_at_log_end", () -> {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (TopicPartition partition : committed.keySet()) {
                latest.put(partition, OffsetSpec.latest());
            }
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends =
                    admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS);
            long total = 0;
            Map<String, Object> detail = new LinkedHashMap<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> entry : committed.entrySet()) {
                long end = ends.get(entry.getKey()).offset();
                Checks.require(entry.getValue().offset() == end,
                        entry.getKey() + " committed " + entry.getValue().offset() + " of " + end);
                total += end;
                detail.put(entry.getKey().toString(), end);
            }
            Checks.require(committed.size() == 3, "committed offsets for " + committed.size() + " partitions");
            Checks.require(total >= produced, "log end offsets sum to " + total + " < " + produced);
            return detail;
        });
        Checks.check("list_offsets_earliest", () -> {
            Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
            for (int p = 0; p < 3; p++) {
                earliest.put(new TopicPartition(topic, p), OffsetSpec.earliest());
            }
            for (ListOffsetsResult.ListOffsetsResultInfo info : admin.listOffsets(earliest).all().get(30, TimeUnit.SECONDS).values()) {
                Checks.require(info.offset() == 0, "earliest " + info.offset());
            }
            return null;
        });
    }
}
