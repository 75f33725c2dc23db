import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's Java client on a compacted topic. `produce BROKERS TOPIC CODEC ROUNDS KEYS PAUSE_MS`: creates the topic
 * (cleanup.policy=compact, segments rolled every PAUSE_MS / 2 ms) and writes ROUNDS overwrites of KEYS keys with an
 * idempotent producer, the last round's every third key a tombstone, pausing PAUSE_MS between rounds so that each
 * round rolls a segment, then one "marker" record after a pause; the detail maps each key to the offset of its last
 * record. `read BROKERS TOPIC`: a consumer assigned partition 0 reads from the beginning to the end offset; the
 * detail lists [offset, key, value] of every record, across the offsets the cleaner removed.
 */
public final class Compaction {
    public static void main(String[] args) throws Exception {
        String brokers = args[1];
        String topic = args[2];
        if (args[0].equals("produce")) {
            Checks.check("produce", () -> produce(brokers, topic, args[3], Integer.parseInt(args[4]),
                    Integer.parseInt(args[5]), Integer.parseInt(args[6])));
        } else {
            Checks.check("read", () -> read(brokers, topic));
        }
    }

    private static Object produce(String brokers, String topic, String codec, int rounds, int keys, int pauseMs)
            throws Exception {
        Properties admin = new Properties();
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        try (Admin client = Admin.create(admin)) {
            Map<String, String> configs = new HashMap<>();
            configs.put("cleanup.policy", "compact");
            configs.put("segment.ms", String.valueOf(pauseMs / 2));
            configs.put("min.cleanable.dirty.ratio", "0.01");
            client.createTopics(Collections.singleton(new NewTopic(topic, 1, (short) 3).configs(configs))).all().get();
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        props.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        Map<String, Object> last = new LinkedHashMap<>();
        try (KafkaProducer<String, String> producer =
                     new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            for (int round = 0; round < rounds; round++) {
                List<Future<RecordMetadata>> sent = new ArrayList<>();
                List<String> sentKeys = new ArrayList<>();
                for (int k = 0; k < keys; k++) {
                    String key = "key-" + k;
                    String value = (round == rounds - 1 && k % 3 == 0) ? null : key + "-round-" + round;
                    sent.add(producer.send(new ProducerRecord<>(topic, 0, key, value)));
                    sentKeys.add(key);
                }
                for (int i = 0; i < sent.size(); i++) {
                    last.put(sentKeys.get(i), sent.get(i).get().offset());
                }
                Thread.sleep(pauseMs);
            }
            last.put("marker", producer.send(new ProducerRecord<>(topic, 0, "marker", "end")).get().offset());
        }
        return last;
    }

    private static Object read(String brokers, String topic) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        List<Object> rows = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                     new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(Collections.singleton(tp));
            consumer.seekToBeginning(Collections.singleton(tp));
            long end = consumer.endOffsets(Collections.singleton(tp)).get(tp);
            long deadline = System.currentTimeMillis() + 60_000;
            while (consumer.position(tp) < end) {
                Checks.require(System.currentTimeMillis() < deadline,
                        "stuck at " + consumer.position(tp) + " of " + end);
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    List<Object> row = new ArrayList<>();
                    row.add(record.offset());
                    row.add(record.key());
                    row.add(record.value());
                    rows.add(row);
                }
            }
        }
        return rows;
    }
}
