import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Broker configs through Kafka's Java Admin (issue 35): describeConfigs of a broker with synonyms and documentation,
 * of the cluster default and of a broker's loggers; incrementalAlterConfigs of the cluster default and of one broker
 * (the override beats the default in the synonyms), refusals of what pykraft would not apply, and createTopics'
 * answer carrying the new topic's configs. Args: brokers bootstrap, a broker id, the static min.insync.replicas.
 */
public final class BrokerConfigs {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        String broker = args[1];
        String staticMinIsr = args[2];
        ConfigResource own = new ConfigResource(ConfigResource.Type.BROKER, broker);
        ConfigResource cluster = new ConfigResource(ConfigResource.Type.BROKER, "");
        try (Admin admin = Admin.create(props)) {
            Checks.check("describe_broker_with_synonyms_and_documentation", () -> {
                Config config = describe(admin, own);
                Checks.require(config.entries().size() > 250, "entries: " + config.entries().size());
                ConfigEntry minIsr = config.get("min.insync.replicas");
                Checks.require(staticMinIsr.equals(minIsr.value()), "value " + minIsr.value());
                Checks.require(minIsr.source() == ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG, "source " + minIsr);
                Checks.require(minIsr.synonyms().size() == 2
                        && minIsr.synonyms().get(1).source() == ConfigEntry.ConfigSource.DEFAULT_CONFIG
                        && "1".equals(minIsr.synonyms().get(1).value()), "synonyms " + minIsr.synonyms());
                Checks.require(!minIsr.isReadOnly() && config.get("log.dirs").isReadOnly(), "read-only flags");
                Checks.require(minIsr.type() == ConfigEntry.ConfigType.INT, "type " + minIsr.type());
                Checks.require(minIsr.documentation() != null, "no documentation");
                ConfigEntry password = config.get("ssl.keystore.password");
                Checks.require(password.isSensitive() && password.value() == null, "password " + password);
                return minIsr.toString();
            });
            Checks.check("alter_default_and_override", () -> {
                alter(admin, cluster, "log.retention.ms", "604800000");
                alter(admin, own, "log.retention.ms", "86400000");
                ConfigEntry entry = waitFor(admin, own, "log.retention.ms", "86400000");
                Checks.require(entry.source() == ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG, "source " + entry);
                List<String> sources = new ArrayList<>();
                for (ConfigEntry.ConfigSynonym synonym : entry.synonyms()) {
                    sources.add(synonym.source() + ":" + synonym.name() + "=" + synonym.value());
                }
                Checks.require(sources.size() >= 2 && sources.get(0).equals("DYNAMIC_BROKER_CONFIG:log.retention.ms=86400000")
                        && sources.get(1).equals("DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=604800000"),
                        "synonyms " + sources);
                ConfigEntry atDefault = describe(admin, cluster).get("log.retention.ms");
                Checks.require(atDefault.source() == ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                        "default " + atDefault);
                delete(admin, own, "log.retention.ms");
                delete(admin, cluster, "log.retention.ms");
                return sources;
            });
            Checks.check("refuse_a_key_kafka_cannot_change_dynamically", () -> refused(admin, cluster, "log.dirs",
                    "org.apache.kafka.common.errors.InvalidRequestException", "Cannot update these configs dynamically"));
            Checks.check("refuse_a_key_pykraft_does_not_implement", () -> refused(admin, cluster, "num.io.threads",
                    "org.apache.kafka.common.errors.InvalidConfigurationException", "pykraft does not implement"));
            Checks.check("describe_broker_loggers", () -> {
                Config loggers = describe(admin, new ConfigResource(ConfigResource.Type.BROKER_LOGGER, broker));
                ConfigEntry root = loggers.get("root");
                Checks.require(root != null && root.source() == ConfigEntry.ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
                        "root " + root);
                return root.value();
            });
            Checks.check("create_topic_returns_its_configs", () -> {
                NewTopic topic = new NewTopic("java_configs_created", 2, (short) 1)
                        .configs(Map.of("retention.ms", "3600000"));
                CreateTopicsResult created = admin.createTopics(List.of(topic), new CreateTopicsOptions().validateOnly(true));
                Config config = created.config("java_configs_created").get(20, TimeUnit.SECONDS);
                ConfigEntry retention = config.get("retention.ms");
                Checks.require("3600000".equals(retention.value())
                        && retention.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, "retention " + retention);
                Checks.require(config.entries().size() > 30, "entries " + config.entries().size());
                int partitions = created.numPartitions("java_configs_created").get();
                int replication = created.replicationFactor("java_configs_created").get();
                Checks.require(partitions == 2 && replication == 1, partitions + " x " + replication);
                Map<String, Object> detail = new LinkedHashMap<>();
                detail.put("retention.ms", retention.toString());
                detail.put("segment.bytes", config.get("segment.bytes").source().toString());
                return detail;
            });
        }
    }

    static Config describe(Admin admin, ConfigResource resource) throws Exception {
        DescribeConfigsOptions options = new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true);
        return admin.describeConfigs(Set.of(resource), options).all().get(20, TimeUnit.SECONDS).get(resource);
    }

    static void alter(Admin admin, ConfigResource resource, String key, String value) throws Exception {
        admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(new ConfigEntry(key, value),
                AlterConfigOp.OpType.SET)))).all().get(20, TimeUnit.SECONDS);
    }

    static void delete(Admin admin, ConfigResource resource, String key) throws Exception {
        admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(new ConfigEntry(key, null),
                AlterConfigOp.OpType.DELETE)))).all().get(20, TimeUnit.SECONDS);
    }

    /** The entry once the broker's metadata image has the value (it follows the controller's commit). */
    static ConfigEntry waitFor(Admin admin, ConfigResource resource, String key, String value) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            ConfigEntry entry = describe(admin, resource).get(key);
            if (value.equals(entry.value()) || System.currentTimeMillis() > deadline) {
                return entry;
            }
            Thread.sleep(200);
        }
    }

    static String refused(Admin admin, ConfigResource resource, String key, String exception, String message)
            throws Exception {
        try {
            alter(admin, resource, key, "1");
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable cause = e.getCause();
            Checks.require(cause.getClass().getName().equals(exception) && cause.getMessage().contains(message),
                    "refused with " + cause);
            return cause.getMessage();
        }
        throw new IllegalStateException(key + " was accepted");
    }
}
