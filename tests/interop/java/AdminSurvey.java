import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeTransactionsOptions;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.FenceProducersOptions;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Every Admin method of kafka-clients 3.9.1 against a pykraft cluster (args: brokerBootstrap topicPrefix).
 * A method is answered when its future completes, or fails with an error the server chose (an ApiException other
 * than UnsupportedVersionException); it is unanswered when the client finds no node supporting its API
 * (UnsupportedVersionException) or gets no answer in time. Each check's detail is "ok" or the exception's class,
 * so the survey is also the list of what Kafka's Java Admin cannot do against pykraft yet.
 */
public final class AdminSurvey {
    interface Call {
        KafkaFuture<?> start() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        String brokers = args[0];
        String topic = args[1] + "-survey";
        String group = args[1] + "-survey-group";
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 3))).all().get(30, TimeUnit.SECONDS);
            seed(brokers, topic, group);
            TopicPartition p0 = new TopicPartition(topic, 0);
            ConfigResource topicResource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            ConfigResource brokerResource = new ConfigResource(ConfigResource.Type.BROKER, "");
            survey("listTopics", () -> admin.listTopics().names());
            survey("describeTopics", () -> admin.describeTopics(List.of(topic)).allTopicNames());
            survey("describeCluster", () -> admin.describeCluster().nodes());
            survey("describeConfigs_topic", () -> admin.describeConfigs(List.of(topicResource)).all());
            survey("describeConfigs_broker", () -> admin.describeConfigs(
                    List.of(new ConfigResource(ConfigResource.Type.BROKER, firstBroker(admin)))).all());
            survey("incrementalAlterConfigs_topic", () -> admin.incrementalAlterConfigs(Map.of(topicResource, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "86400000"), AlterConfigOp.OpType.SET)))).all());
            survey("incrementalAlterConfigs_broker_default", () -> admin.incrementalAlterConfigs(Map.of(brokerResource,
                    List.of(new AlterConfigOp(new ConfigEntry("log.retention.ms", "604800000"), AlterConfigOp.OpType.SET)))).all());
            survey("createPartitions", () -> admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all());
            survey("listOffsets", () -> admin.listOffsets(Map.of(p0, OffsetSpec.latest())).all());
            survey("listOffsets_maxTimestamp", () -> admin.listOffsets(Map.of(p0, OffsetSpec.maxTimestamp())).all());
            survey("deleteRecords", () -> admin.deleteRecords(Map.of(p0, RecordsToDelete.beforeOffset(1))).all());
            survey("describeLogDirs", () -> admin.describeLogDirs(List.of(Integer.parseInt(firstBroker(admin)))).allDescriptions());
            survey("describeReplicaLogDirs", () -> admin.describeReplicaLogDirs(
                    List.of(new TopicPartitionReplica(topic, 0, Integer.parseInt(firstBroker(admin))))).all());
            survey("alterReplicaLogDirs", () -> admin.alterReplicaLogDirs(
                    Map.of(new TopicPartitionReplica(topic, 0, Integer.parseInt(firstBroker(admin))), "/nonexistent")).all());
            survey("electLeaders_preferred", () -> admin.electLeaders(ElectionType.PREFERRED, Set.of(p0)).all());
            survey("listPartitionReassignments", () -> admin.listPartitionReassignments().reassignments());
            survey("alterPartitionReassignments_cancel", () -> admin.alterPartitionReassignments(
                    Map.of(p0, Optional.<NewPartitionReassignment>empty())).all());
            survey("listConsumerGroups", () -> admin.listConsumerGroups().all());
            survey("describeConsumerGroups", () -> admin.describeConsumerGroups(List.of(group)).all());
            survey("listConsumerGroupOffsets", () -> admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
            survey("alterConsumerGroupOffsets", () -> admin.alterConsumerGroupOffsets(group,
                    Map.of(p0, new OffsetAndMetadata(0))).all());
            survey("deleteConsumerGroupOffsets", () -> admin.deleteConsumerGroupOffsets(group, Set.of(p0)).all());
            survey("removeMembersFromConsumerGroup_unknown", () -> admin.removeMembersFromConsumerGroup(group,
                    new RemoveMembersFromConsumerGroupOptions(List.of(new MemberToRemove("no-such-instance")))).all());
            survey("deleteConsumerGroups", () -> admin.deleteConsumerGroups(List.of(group)).all());
            survey("describeAcls", () -> admin.describeAcls(AclBindingFilter.ANY).values());
            survey("describeClientQuotas", () -> admin.describeClientQuotas(ClientQuotaFilter.all()).entities());
            survey("alterClientQuotas", () -> admin.alterClientQuotas(List.of(new ClientQuotaAlteration(
                    new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, "survey")),
                    List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0))))).all());
            survey("describeUserScramCredentials", () -> admin.describeUserScramCredentials().all());
            survey("alterUserScramCredentials", () -> admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(
                    "survey-user", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "secret"))).all());
            survey("describeDelegationToken", () -> admin.describeDelegationToken().delegationTokens());
            survey("describeFeatures", () -> admin.describeFeatures().featureMetadata());
            survey("updateFeatures_validateOnly", () -> admin.updateFeatures(Map.of("metadata.version",
                    new FeatureUpdate((short) 27, FeatureUpdate.UpgradeType.UPGRADE)), new UpdateFeaturesOptions().validateOnly(true)).all());
            survey("describeMetadataQuorum", () -> admin.describeMetadataQuorum().quorumInfo());
            survey("describeProducers", () -> admin.describeProducers(List.of(p0)).all());
            survey("listTransactions", () -> admin.listTransactions().all());
            survey("describeTransactions", () -> admin.describeTransactions(List.of("survey-txn"),
                    new DescribeTransactionsOptions().timeoutMs(5000)).all());
            survey("fenceProducers", () -> admin.fenceProducers(List.of("survey-txn"),
                    new FenceProducersOptions().timeoutMs(5000)).all());
            survey("listClientMetricsResources", () -> admin.listClientMetricsResources().all());
            survey("unregisterBroker_unknown", () -> admin.unregisterBroker(999).all());
            survey("deleteTopics", () -> admin.deleteTopics(List.of(topic)).all());
        }
    }

    static String firstBroker(Admin admin) throws Exception {
        return admin.describeCluster().nodes().get(20, TimeUnit.SECONDS).iterator().next().idString();
    }

    static void seed(String brokers, String topic, String group) throws Exception {
        Properties producerProps = new Properties();
        producerProps.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        try (KafkaProducer<String, String> producer =
                     new KafkaProducer<>(producerProps, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)).get(30, TimeUnit.SECONDS);
            }
        }
        Properties consumerProps = new Properties();
        consumerProps.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        consumerProps.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        consumerProps.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaConsumer<String, String> consumer =
                     new KafkaConsumer<>(consumerProps, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            while (seen < 10 && System.currentTimeMillis() < deadline) {
                seen += consumer.poll(Duration.ofMillis(500)).count();
            }
            consumer.commitSync();
        }
    }

    static void survey(String name, Call call) {
        Checks.check(name, () -> {
            try {
                call.start().get(30, TimeUnit.SECONDS);
                return "ok";
            } catch (java.util.concurrent.ExecutionException e) {
                Throwable cause = e.getCause();
                if (cause instanceof UnsupportedVersionException || cause instanceof TimeoutException
                        || !(cause instanceof ApiException)) {
                    throw e;
                }
                return cause.getClass().getSimpleName();  // the server answered with an error of its choice
            }
        });
    }
}
