import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's transactional producer, read_committed consumer and transaction Admin calls against pykraft
 * (args: brokerBootstrap topicPrefix): commit and abort across two topics read back read_committed and
 * read_uncommitted; a consume-transform-produce loop with sendOffsetsToTransaction; a zombie fenced by a second
 * producer with the same transactional.id; a transaction aborted by its timeout; listTransactions,
 * describeTransactions, describeProducers (the open transaction's start offset), fenceProducers and
 * abortTransaction. The cluster runs the timeout check every second
 * (transaction.abort.timed.out.transaction.cleanup.interval.ms=1000).
 */
public final class Transactions {
    static String brokers;

    public static void main(String[] args) throws Exception {
        brokers = args[0];
        String a = args[1] + "-a", b = args[1] + "-b", in = args[1] + "-in", out = args[1] + "-out";
        String open = args[1] + "-open";
        try (Admin admin = admin()) {
            List<NewTopic> topics = new ArrayList<>();
            for (String t : List.of(a, b, in, out, open)) {
                topics.add(new NewTopic(t, 1, (short) 3));
            }
            admin.createTopics(topics).all().get(60, TimeUnit.SECONDS);
        }
        Checks.check("commit_and_abort_across_two_topics", () -> commitAndAbort(a, b));
        Checks.check("consume_transform_produce", () -> consumeTransformProduce(in, out));
        Checks.check("zombie_fenced", () -> zombie(a));
        Checks.check("transaction_timeout_aborts", () -> timeout(b));
        Checks.check("admin_transactions", () -> adminCalls(open));
    }

    static Object commitAndAbort(String a, String b) throws Exception {
        try (KafkaProducer<String, String> producer = transactional("java-two-topics", 60000)) {
            producer.initTransactions();
            send(producer, List.of(a, b), "committed", 10, true);
            send(producer, List.of(a, b), "aborted", 5, false);
            send(producer, List.of(a, b), "again", 3, true);
        }
        Map<String, Object> detail = new HashMap<>();
        for (String topic : List.of(a, b)) {
            List<String> committed = readAll(topic, "read_committed", 13);
            List<String> uncommitted = readAll(topic, "read_uncommitted", 18);
            Checks.require(committed.size() == 13 && committed.stream().noneMatch(v -> v.startsWith("aborted")),
                    topic + " read_committed: " + committed);
            Checks.require(uncommitted.size() == 18, topic + " read_uncommitted: " + uncommitted);
            detail.put(topic, committed.size() + "/" + uncommitted.size());
        }
        return detail;
    }

    static void send(KafkaProducer<String, String> producer, List<String> topics, String prefix, int count,
                     boolean commit) throws Exception {
        producer.beginTransaction();
        for (int i = 0; i < count; i++) {
            for (String topic : topics) {
                producer.send(new ProducerRecord<>(topic, "k" + i, prefix + "-" + i));
            }
        }
        producer.flush();
        if (commit) {
            producer.commitTransaction();
        } else {
            producer.abortTransaction();
        }
    }

    static Object consumeTransformProduce(String in, String out) throws Exception {
        try (KafkaProducer<String, String> plain = new KafkaProducer<>(props(Map.of()))) {
            for (int i = 0; i < 40; i++) {
                plain.send(new ProducerRecord<>(in, "k" + i, "v" + i)).get(30, TimeUnit.SECONDS);
            }
        }
        String group = "java-ctp";
        int copied = 0;
        try (KafkaProducer<String, String> producer = transactional("java-ctp", 60000);
             KafkaConsumer<String, String> consumer = consumer("read_committed", group)) {
            producer.initTransactions();
            consumer.subscribe(List.of(in));
            long deadline = System.currentTimeMillis() + 60000;
            while (copied < 40 && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>(out, r.key(), r.value().toUpperCase()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    copied++;
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
            }
        }
        List<String> output = readAll(out, "read_committed", 40);
        Checks.require(output.size() == 40, "output " + output);
        try (Admin admin = admin()) {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            long offset = committed.get(new TopicPartition(in, 0)).offset();
            Checks.require(offset == 40, "committed offset " + offset);
        }
        return copied;
    }

    static Object zombie(String topic) throws Exception {
        KafkaProducer<String, String> first = transactional("java-zombie", 60000);
        first.initTransactions();
        first.beginTransaction();
        first.send(new ProducerRecord<>(topic, "z", "zombie")).get(30, TimeUnit.SECONDS);
        String outcome;
        try (KafkaProducer<String, String> second = transactional("java-zombie", 60000)) {
            second.initTransactions();  // fences the first instance and aborts its transaction
            try {
                first.send(new ProducerRecord<>(topic, "z", "zombie-late")).get(30, TimeUnit.SECONDS);
                first.commitTransaction();
                outcome = "the zombie committed";
            } catch (Exception e) {
                outcome = rootName(e);
            } finally {
                first.close(Duration.ZERO);
            }
            second.beginTransaction();
            second.send(new ProducerRecord<>(topic, "z", "successor")).get(30, TimeUnit.SECONDS);
            second.commitTransaction();
        }
        Checks.require(outcome.equals("ProducerFencedException") || outcome.equals("InvalidProducerEpochException"),
                "the zombie's outcome: " + outcome);
        List<String> seen = readAll(topic, "read_committed", 14);
        Checks.require(seen.contains("successor") && !seen.contains("zombie") && !seen.contains("zombie-late"),
                "read_committed saw " + seen);
        return outcome;
    }

    static Object timeout(String topic) throws Exception {
        String outcome;
        try (KafkaProducer<String, String> producer = transactional("java-timeout", 2000)) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, "t", "timed-out")).get(30, TimeUnit.SECONDS);
            long lsoDeadline = System.currentTimeMillis() + 30000;
            long end = endOffset(topic, "read_uncommitted");
            while (endOffset(topic, "read_committed") < end && System.currentTimeMillis() < lsoDeadline) {
                Thread.sleep(200);  // the coordinator aborts it: the last stable offset passes it
            }
            Checks.require(endOffset(topic, "read_committed") > end - 1, "the LSO stayed below the open transaction");
            try {
                producer.commitTransaction();
                outcome = "committed after its timeout";
            } catch (Exception e) {
                outcome = rootName(e);
            }
        }
        Checks.require(!outcome.startsWith("committed"), outcome);
        List<String> seen = readAll(topic, "read_committed", 13);
        Checks.require(!seen.contains("timed-out"), "read_committed saw " + seen);
        return outcome;
    }

    static Object adminCalls(String topic) throws Exception {
        Map<String, Object> detail = new HashMap<>();
        KafkaProducer<String, String> hanging = transactional("java-open", 60000);
        try (Admin admin = admin()) {
            hanging.initTransactions();
            hanging.beginTransaction();
            hanging.send(new ProducerRecord<>(topic, "o", "open")).get(30, TimeUnit.SECONDS);
            Collection<TransactionListing> listed = admin.listTransactions().all().get(30, TimeUnit.SECONDS);
            Checks.require(listed.stream().anyMatch(t -> t.transactionalId().equals("java-open")
                    && t.state().toString().equals("Ongoing")), "listTransactions: " + listed);
            TransactionDescription described = admin.describeTransactions(List.of("java-open"))
                    .description("java-open").get(30, TimeUnit.SECONDS);
            TopicPartition tp = new TopicPartition(topic, 0);
            Checks.require(described.topicPartitions().contains(tp), "describeTransactions: " + described);
            detail.put("described", described.state().toString());
            List<ProducerState> producers = admin.describeProducers(List.of(tp)).partitionResult(tp)
                    .get(30, TimeUnit.SECONDS).activeProducers();
            ProducerState state = producers.stream().filter(p -> p.producerId() == described.producerId())
                    .findFirst().orElseThrow();
            Checks.require(state.currentTransactionStartOffset().isPresent(), "describeProducers: " + producers);
            detail.put("txnStartOffset", state.currentTransactionStartOffset().getAsLong());
            long before = endOffset(topic, "read_committed");
            admin.abortTransaction(new AbortTransactionSpec(tp, state.producerId(), (short) state.producerEpoch(),
                    state.coordinatorEpoch().orElse(0))).all().get(30, TimeUnit.SECONDS);
            long after = endOffset(topic, "read_committed");
            Checks.require(after > before, "abortTransaction left the LSO at " + after);
            admin.fenceProducers(List.of("java-open")).all().get(30, TimeUnit.SECONDS);
            detail.put("lso", before + "->" + after);
        } finally {
            hanging.close(Duration.ZERO);
        }
        return detail;
    }

    // ---- helpers ----------------------------------------------------------------------------------------------
    static String rootName(Throwable e) {
        Throwable cause = e;
        while (cause.getCause() != null && !(cause instanceof ProducerFencedException)
                && !(cause instanceof InvalidProducerEpochException)) {
            cause = cause.getCause();
        }
        return cause.getClass().getSimpleName();
    }

    static Admin admin() {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        return Admin.create(props);
    }

    static Properties props(Map<String, String> extra) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.putAll(extra);
        return props;
    }

    static KafkaProducer<String, String> transactional(String id, int timeoutMs) {
        return new KafkaProducer<>(props(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id,
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, String.valueOf(timeoutMs),
                ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000")));
    }

    static KafkaConsumer<String, String> consumer(String isolation, String group) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (group != null) {
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        return new KafkaConsumer<>(props);
    }

    static List<String> readAll(String topic, String isolation, int expected) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = consumer(isolation, null)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long end = consumer.endOffsets(List.of(tp)).get(tp);
            long deadline = System.currentTimeMillis() + 30000;
            while (consumer.position(tp) < end && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(300))) {
                    values.add(r.value());
                }
            }
        }
        return values;
    }

    static long endOffset(String topic, String isolation) {
        try (KafkaConsumer<String, String> consumer = consumer(isolation, null)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            return consumer.endOffsets(List.of(tp)).get(tp);
        }
    }
}
