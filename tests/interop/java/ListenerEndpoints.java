import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's Java client on one listener of a broker with several:
 * args: bootstrap expectedEndpoints topic [caPem].
 * `expectedEndpoints` is "id@host:port,..." (that listener's advertised endpoint of every broker); with `caPem`
 * the client speaks SSL and trusts that CA. Every node the client is told of (describeCluster, a topic's leader
 * and replicas, the producer's and consumer's metadata) must be one of those endpoints, and producing and a
 * consumer group's reading must work through them.
 */
public final class ListenerEndpoints {
    static final int RECORDS = 100;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        Set<String> expected = new TreeSet<>(List.of(args[1].split(",")));
        String topic = args[2];
        String ca = args.length > 3 ? args[3] : null;
        try (Admin admin = Admin.create(props(bootstrap, ca))) {
            Checks.check("describe_cluster_endpoints", () -> {
                Set<String> nodes = new TreeSet<>();
                for (Node node : admin.describeCluster().nodes().get(30, TimeUnit.SECONDS)) {
                    nodes.add(endpoint(node));
                }
                Checks.require(nodes.equals(expected), "nodes " + nodes + ", expected " + expected);
                return new ArrayList<>(nodes);
            });
            Checks.check("create_topic_on_this_listener", () -> {
                admin.createTopics(List.of(new NewTopic(topic, 2, (short) 2))).all().get(30, TimeUnit.SECONDS);
                return null;
            });
            Checks.check("describe_topic_endpoints", () -> {
                long deadline = System.currentTimeMillis() + 30_000;
                while (true) {
                    TopicDescription description;
                    try {
                        description = admin.describeTopics(List.of(topic)).allTopicNames()
                                .get(30, TimeUnit.SECONDS).get(topic);
                    } catch (ExecutionException e) {
                        // The broker asked may not have replayed the creation yet (Kafka's metadata propagation).
                        Checks.require(e.getCause() instanceof UnknownTopicOrPartitionException
                                && System.currentTimeMillis() < deadline, String.valueOf(e.getCause()));
                        Thread.sleep(200);
                        continue;
                    }
                    Set<String> seen = new TreeSet<>();
                    boolean led = true;
                    for (TopicPartitionInfo partition : description.partitions()) {
                        led &= partition.leader() != null;
                        if (partition.leader() != null) {
                            seen.add(endpoint(partition.leader()));
                        }
                        for (Node replica : partition.replicas()) {
                            seen.add(endpoint(replica));
                        }
                    }
                    if (led) {
                        Checks.require(expected.containsAll(seen), "endpoints " + seen + " not all in " + expected);
                        return new ArrayList<>(seen);
                    }
                    Checks.require(System.currentTimeMillis() < deadline, "a partition without a leader");
                    Thread.sleep(200);
                }
            });
        }
        Checks.check("produce_through_this_listener", () -> produce(bootstrap, ca, topic, expected));
        Checks.check("consume_group_through_this_listener", () -> consume(bootstrap, ca, topic, expected));
    }

    static String endpoint(Node node) {
        return node.id() + "@" + node.host() + ":" + node.port();
    }

    static Properties props(String bootstrap, String ca) {
        Properties props = new Properties();
        props.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        props.put(CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        if (ca != null) {
            props.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SSL");
            props.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
            props.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, ca);
            props.put(SslConfigs.SSL_ENDPOINT_IDENTIFICATION_ALGORITHM_CONFIG, "");  // nodes are addressed by IP
        }
        return props;
    }

    static Object produce(String bootstrap, String ca, String topic, Set<String> expected) throws Exception {
        Properties props = props(bootstrap, ca);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < RECORDS; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)));
            }
            for (Future<RecordMetadata> future : sent) {
                future.get(60, TimeUnit.SECONDS);
            }
            Set<String> leaders = new TreeSet<>();
            for (PartitionInfo info : producer.partitionsFor(topic)) {
                leaders.add(endpoint(info.leader()));
            }
            Checks.require(expected.containsAll(leaders), "leaders " + leaders + " not all in " + expected);
            return new ArrayList<>(leaders);
        }
    }

    static Object consume(String bootstrap, String ca, String topic, Set<String> expected) throws Exception {
        Properties props = props(bootstrap, ca);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, topic + "-group");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            Set<String> values = new HashSet<>();
            long deadline = System.currentTimeMillis() + 60_000;
            while (values.size() < RECORDS) {
                Checks.require(System.currentTimeMillis() < deadline, "read " + values.size() + " of " + RECORDS);
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    values.add(record.value());
                }
            }
            consumer.commitSync(Duration.ofSeconds(30));
            Set<String> nodes = new TreeSet<>();
            for (List<PartitionInfo> infos : consumer.listTopics(Duration.ofSeconds(30)).values()) {
                for (PartitionInfo info : infos) {
                    if (info.leader() != null) {
                        nodes.add(endpoint(info.leader()));
                    }
                }
            }
            Checks.require(expected.containsAll(nodes), "leaders " + nodes + " not all in " + expected);
            return Map.of("records", values.size(), "leaders", new ArrayList<>(nodes));
        }
    }
}
