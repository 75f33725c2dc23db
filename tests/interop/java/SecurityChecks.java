import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's Java client against a pykraft cluster with SASL_PLAINTEXT listeners and the StandardAuthorizer
 * (tests/e2e/security_cluster.py): args: bootstrap.
 * Logins with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (right and wrong passwords), the Admin ACL methods
 * (createAcls, describeAcls, deleteAcls), the SCRAM credential methods (alter and describe, then a login with the new
 * user), and authorization as the client sees it: TopicAuthorizationException, GroupAuthorizationException,
 * ClusterAuthorizationException, a prefixed ALLOW and a DENY, with the classic and the KIP-848 consumer protocols.
 */
public final class SecurityChecks {
    static final String PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule";
    static final String SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule";

    /** The CA's PEM file when the listeners are SASL_SSL (args[1] given), else null: SASL_PLAINTEXT. */
    static String tlsCa = null;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        if (args.length > 1) {
            tlsCa = args[1];
            overTls(bootstrap);
            return;
        }
        try (Admin admin = Admin.create(props(bootstrap, "PLAIN", "admin", "admin-secret"))) {
            Checks.check("admin_creates_topics", () -> {
                admin.createTopics(List.of(new NewTopic("java-sec", 1, (short) 2), new NewTopic("java-secret", 1,
                        (short) 2))).all().get(30, TimeUnit.SECONDS);
                return null;
            });
            Checks.check("create_acls", () -> {
                admin.createAcls(List.of(
                        acl(ResourceType.TOPIC, "java-", PatternType.PREFIXED, "User:alice", AclOperation.ALL,
                                AclPermissionType.ALLOW),
                        acl(ResourceType.GROUP, "java-group", PatternType.LITERAL, "User:alice", AclOperation.READ,
                                AclPermissionType.ALLOW),
                        acl(ResourceType.GROUP, "java-kip848", PatternType.LITERAL, "User:alice", AclOperation.READ,
                                AclPermissionType.ALLOW),
                        acl(ResourceType.TOPIC, "java-secret", PatternType.LITERAL, "User:alice", AclOperation.ALL,
                                AclPermissionType.DENY))).all().get(30, TimeUnit.SECONDS);
                return null;
            });
            Checks.check("describe_acls", () -> eventually(() -> {  // a broker answers once it replayed the ACLs
                Collection<AclBinding> found = admin.describeAcls(new AclBindingFilter(new ResourcePatternFilter(
                        ResourceType.ANY, null, PatternType.ANY), AccessControlEntryFilter.ANY)).values()
                        .get(30, TimeUnit.SECONDS);
                Checks.require(found.size() >= 3, "found " + found);
                return found.size();
            }));
            Checks.check("alter_user_scram_credentials", () -> {
                admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion("java-user",
                        new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), "java-secret-pw")))
                        .all().get(30, TimeUnit.SECONDS);
                return null;
            });
            Checks.check("describe_user_scram_credentials", () -> eventually(() -> {
                Map<String, UserScramCredentialsDescription> users = admin.describeUserScramCredentials(
                        List.of("java-user")).all().get(30, TimeUnit.SECONDS);
                List<ScramCredentialInfo> infos = users.get("java-user").credentialInfos();
                Checks.require(infos.size() == 1, "described " + infos);
                ScramCredentialInfo info = infos.get(0);
                Checks.require(info.mechanism() == ScramMechanism.SCRAM_SHA_512 && info.iterations() == 8192,
                        "described " + info);
                return info.toString();
            }));
        }
        for (String mechanism : List.of("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")) {
            Checks.check("alice_produces_and_consumes_" + mechanism,
                    () -> roundTrip(bootstrap, mechanism, "alice", "alice-secret", "java-sec"));
            Checks.check("wrong_password_refused_" + mechanism, () -> {
                try {
                    produce(bootstrap, mechanism, "alice", "wrong-password", "java-sec", 1);
                } catch (ExecutionException | org.apache.kafka.common.KafkaException e) {
                    Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
                    Checks.require(cause instanceof SaslAuthenticationException, "refused with " + cause);
                    return cause.getClass().getSimpleName();
                }
                throw new IllegalStateException("a wrong password produced");
            });
        }
        Checks.check("new_scram_user_logs_in", () -> eventually(() -> {
            Properties props = props(bootstrap, "SCRAM-SHA-512", "java-user", "java-secret-pw");
            try (Admin user = Admin.create(props)) {  // any authenticated request will do: DescribeCluster
                return user.describeCluster().nodes().get(30, TimeUnit.SECONDS).size();
            }
        }));
        Checks.check("denied_topic", () -> expect(TopicAuthorizationException.class,
                () -> produce(bootstrap, "SCRAM-SHA-256", "alice", "alice-secret", "java-secret", 1)));
        Checks.check("denied_group", () -> expect(GroupAuthorizationException.class,
                () -> consume(bootstrap, "PLAIN", "alice", "alice-secret", "java-sec", "other-group", 1, "classic")));
        // KIP-848 (group.protocol=consumer): ConsumerGroupHeartbeat checks READ on the group and DESCRIBE on the topics
        Checks.check("consumer_protocol_reads", () -> consume(bootstrap, "SCRAM-SHA-512", "alice", "alice-secret",
                "java-sec", "java-kip848", 10, "consumer"));
        Checks.check("consumer_protocol_denied_group", () -> expect(GroupAuthorizationException.class,
                () -> consume(bootstrap, "PLAIN", "alice", "alice-secret", "java-sec", "other-group", 1, "consumer")));
        Checks.check("consumer_protocol_denied_topic", () -> expect(TopicAuthorizationException.class,
                () -> consume(bootstrap, "PLAIN", "alice", "alice-secret", "java-secret", "java-kip848", 1,
                        "consumer")));
        Checks.check("denied_cluster_operation", () -> {
            try (Admin alice = Admin.create(props(bootstrap, "PLAIN", "alice", "alice-secret"))) {
                return expect(ClusterAuthorizationException.class, () -> alice.createAcls(List.of(acl(
                        ResourceType.TOPIC, "x", PatternType.LITERAL, "User:alice", AclOperation.READ,
                        AclPermissionType.ALLOW))).all().get(30, TimeUnit.SECONDS));
            }
        });
        try (Admin admin = Admin.create(props(bootstrap, "PLAIN", "admin", "admin-secret"))) {
            Checks.check("delete_acls", () -> {
                Collection<AclBinding> deleted = admin.deleteAcls(List.of(new AclBindingFilter(
                        new ResourcePatternFilter(ResourceType.TOPIC, "java-", PatternType.PREFIXED),
                        AccessControlEntryFilter.ANY))).all().get(30, TimeUnit.SECONDS);
                Checks.require(deleted.size() == 1, "deleted " + deleted);
                return deleted.size();
            });
            Checks.check("delete_user_scram_credentials", () -> {
                admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion("java-user",
                        ScramMechanism.SCRAM_SHA_512))).all().get(30, TimeUnit.SECONDS);
                return null;
            });
        }
    }

    /** SASL_SSL: the admin creates a topic and alice's ACLs, alice produces and consumes with each mechanism, a
     * wrong password is a SaslAuthenticationException. */
    static void overTls(String bootstrap) throws Exception {
        try (Admin admin = Admin.create(props(bootstrap, "PLAIN", "admin", "admin-secret"))) {
            Checks.check("tls_admin_creates_topic_and_acls", () -> {
                admin.createTopics(List.of(new NewTopic("java-tls", 1, (short) 2))).all().get(30, TimeUnit.SECONDS);
                admin.createAcls(List.of(
                        acl(ResourceType.TOPIC, "java-tls", PatternType.LITERAL, "User:alice", AclOperation.ALL,
                                AclPermissionType.ALLOW),
                        acl(ResourceType.GROUP, "java-group", PatternType.LITERAL, "User:alice", AclOperation.READ,
                                AclPermissionType.ALLOW))).all().get(30, TimeUnit.SECONDS);
                return null;
            });
        }
        for (String mechanism : List.of("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")) {
            Checks.check("tls_alice_produces_and_consumes_" + mechanism, () -> eventually(
                    () -> roundTrip(bootstrap, mechanism, "alice", "alice-secret", "java-tls")));
        }
        Checks.check("tls_wrong_password_refused", () -> expect(SaslAuthenticationException.class,
                () -> produce(bootstrap, "SCRAM-SHA-512", "alice", "wrong-password", "java-tls", 1)));
    }

    interface Action {
        Object run() throws Exception;
    }

    /** `action`'s result once it succeeds, retried for 30 s: a broker answers from its replay of the metadata log,
     * which follows the controller's commit (as in Kafka). */
    static Object eventually(Action action) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            try {
                return action.run();
            } catch (Exception e) {
                if (System.currentTimeMillis() > deadline) {
                    throw e;
                }
                Thread.sleep(300);
            }
        }
    }

    static Object expect(Class<? extends Throwable> expected, Action action) throws Exception {
        try {
            action.run();
        } catch (Exception e) {
            Throwable cause = e;
            while ((cause instanceof ExecutionException || cause instanceof org.apache.kafka.common.KafkaException)
                    && !expected.isInstance(cause) && cause.getCause() != null) {
                cause = cause.getCause();
            }
            Checks.require(expected.isInstance(cause), "failed with " + cause);
            return cause.getClass().getSimpleName();
        }
        throw new IllegalStateException("no " + expected.getSimpleName());
    }

    static AclBinding acl(ResourceType type, String name, PatternType pattern, String principal, AclOperation op,
                          AclPermissionType permission) {
        return new AclBinding(new ResourcePattern(type, name, pattern),
                new AccessControlEntry(principal, "*", op, permission));
    }

    static Properties props(String bootstrap, String mechanism, String user, String password) {
        Properties props = new Properties();
        props.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        props.put(CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        props.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, tlsCa == null ? "SASL_PLAINTEXT" : "SASL_SSL");
        if (tlsCa != null) {  // the test CA as a PEM trust store; its certificates name no host
            props.put("ssl.truststore.type", "PEM");
            props.put("ssl.truststore.location", tlsCa);
            props.put("ssl.endpoint.identification.algorithm", "");
        }
        props.put(SaslConfigs.SASL_MECHANISM, mechanism);
        String module = mechanism.equals("PLAIN") ? PLAIN : SCRAM;
        props.put(SaslConfigs.SASL_JAAS_CONFIG, module + " required username=\"" + user + "\" password=\""
                + password + "\";");
        return props;
    }

    static Object roundTrip(String bootstrap, String mechanism, String user, String password, String topic)
            throws Exception {
        produce(bootstrap, mechanism, user, password, topic, 10);
        return consume(bootstrap, mechanism, user, password, topic, "java-group", 10, "classic");
    }

    static Object produce(String bootstrap, String mechanism, String user, String password, String topic, int count)
            throws Exception {
        Properties props = props(bootstrap, mechanism, user, password);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, mechanism + "-" + i)));
            }
            for (Future<RecordMetadata> future : sent) {
                future.get(60, TimeUnit.SECONDS);
            }
            return count;
        }
    }

    static Object consume(String bootstrap, String mechanism, String user, String password, String topic,
                          String group, int atLeast, String protocol) throws Exception {
        Properties props = props(bootstrap, mechanism, user, password);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            Set<String> values = new HashSet<>();
            long deadline = System.currentTimeMillis() + 60_000;
            while (values.size() < atLeast) {
                Checks.require(System.currentTimeMillis() < deadline, "read " + values.size() + " of " + atLeast);
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    values.add(record.value());
                }
            }
            consumer.commitSync(Duration.ofSeconds(30));
            return values.size();
        }
    }
}
