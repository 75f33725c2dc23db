import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's Java client judging what pykraft's tools did (args: mode brokers topic group):
 * - read: every record of the topic, from the beginning, as "partition|offset|key|value|header=value,..." lines,
 *   and the group's committed offsets and state as Admin reports them;
 * - produce: 24 keyed records with a header, by Kafka's own producer (default partitioner), for
 *   pykraft console-consumer to read back.
 */
public final class ToolsJudge {
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String brokers = args[1];
        String topic = args[2];
        String group = args[3];
        if (mode.equals("produce")) {
            Checks.check("produce", () -> produce(brokers, topic));
            return;
        }
        Checks.check("records", () -> read(brokers, topic));
        Checks.check("group_offsets", () -> {
            try (Admin admin = admin(brokers)) {
                Map<TopicPartition, OffsetAndMetadata> found =
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
                Map<String, Object> out = new TreeMap<>();
                found.forEach((tp, offset) -> out.put(tp.toString(), offset.offset()));
                return out;
            }
        });
        Checks.check("group_state", () -> {
            try (Admin admin = admin(brokers)) {
                ConsumerGroupDescription description =
                    admin.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
                return description.state().toString();  // kafka-clients 3.9: ConsumerGroupState
            }
        });
    }

    static Admin admin(String brokers) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        return Admin.create(props);
    }

    static Object produce(String brokers, String topic) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        try (KafkaProducer<String, String> producer =
                 new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 24; i++) {
                ProducerRecord<String, String> record = new ProducerRecord<>(topic, "key-" + (i % 5), "java-" + i);
                record.headers().add("origin", "java".getBytes());
                producer.send(record).get(30, TimeUnit.SECONDS);
            }
        }
        return 24;
    }

    static Object read(String brokers, String topic) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        List<String> lines = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                 new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(topic)) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
            Map<TopicPartition, Long> seen = new HashMap<>();
            long deadline = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() < deadline && !caughtUp(ends, seen)) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    StringBuilder headers = new StringBuilder();
                    for (Header header : record.headers()) {
                        headers.append(headers.length() == 0 ? "" : ",").append(header.key()).append('=')
                               .append(header.value() == null ? "null" : new String(header.value()));
                    }
                    lines.add(record.partition() + "|" + record.offset() + "|" + record.key() + "|" + record.value()
                              + "|" + headers);
                    seen.put(new TopicPartition(record.topic(), record.partition()), record.offset() + 1);
                }
            }
        }
        return lines;
    }

    static boolean caughtUp(Map<TopicPartition, Long> ends, Map<TopicPartition, Long> seen) {
        for (Map.Entry<TopicPartition, Long> end : ends.entrySet()) {
            if (end.getValue() > seen.getOrDefault(end.getKey(), 0L)) {
                return false;
            }
        }
        return true;
    }
}
