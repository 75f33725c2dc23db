import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * KIP-848's consumer protocol (group.protocol=consumer) through Kafka's own Java client (args: brokers prefix):
 * members join and leave a 6-partition subscription one at a time with commitSync, each record read exactly once;
 * Admin describeConsumerGroups shows type CONSUMER with the assignments; listConsumerGroups filters by type; a
 * pattern subscription picks up a topic created while it runs.
 * With `consume topic group count timeoutMs` it is one member that reads until it has seen `count` distinct
 * records (the Python side kills the coordinator meanwhile) and reports what it read.
 */
public final class ConsumerProtocol {
    static String brokers;

    public static void main(String[] args) throws Exception {
        brokers = args[0];
        if (args.length > 2 && args[2].equals("consume")) {
            consumeUntil(args[3], args[4], Integer.parseInt(args[5]), Long.parseLong(args[6]));
            return;
        }
        String only = args.length > 3 && args[2].equals("only") ? args[3] : null;  // one check, when debugging
        String topic = args[1] + "-848";
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, 6, (short) 3))).all().get(30, TimeUnit.SECONDS);
        }
        String group = args[1] + "-848-group";
        if (only == null || only.equals("join")) {
            Checks.check("members_join_and_leave_one_at_a_time_exactly_once", () -> joinAndLeave(topic, group));
        }
        if (only == null || only.equals("describe")) {
            Checks.check("describe_consumer_group_type_consumer", () -> describe(topic, group));
        }
        if (only == null || only.equals("pattern")) {
            Checks.check("pattern_subscription_picks_up_a_new_topic", () -> pattern(args[1] + "-rx"));
        }
    }

    static Admin admin() {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        return Admin.create(props);
    }

    static KafkaConsumer<String, String> consumer(String group) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "1000");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(props);
    }

    static void produce(String topic, String prefix, int count) throws Exception {
        produce(topic, prefix, count, 6);
    }

    static void produce(String topic, String prefix, int count, int partitions) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, i % partitions, prefix + i, prefix + i));
            }
            producer.flush();
        }
    }

    /** One member: polls, counts what it read, commits after each batch, until told to stop (then leaves). */
    static final class Member extends Thread {
        final KafkaConsumer<String, String> consumer;
        final Map<String, Integer> seen;
        final AtomicBoolean stop = new AtomicBoolean();
        final Set<Integer> assigned = ConcurrentHashMap.newKeySet();
        volatile Throwable failure;

        Member(String group, String topic, Map<String, Integer> seen) {
            this.consumer = consumer(group);
            this.seen = seen;
            // What an application reading each record once does: commit what it read before giving partitions up.
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    commit(consumer);
                }

                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {}
            });
        }

        public void run() {
            try {
                while (!stop.get()) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                        seen.merge(r.value(), 1, Integer::sum);
                    }
                    commit(consumer);
                    assigned.clear();
                    for (TopicPartition tp : consumer.assignment()) {
                        assigned.add(tp.partition());
                    }
                }
            } catch (Throwable t) {
                failure = t;
            } finally {
                consumer.close(Duration.ofSeconds(10));
            }
        }
    }

    /**
     * commitSync, again after a moment when it fails with a stale member epoch: KIP-848 bumps a member's epoch when
     * it acknowledges a revocation, and a commit sent meanwhile carries the epoch before (Kafka 4.0 answers
     * STALE_MEMBER_EPOCH too; the client learns the new epoch from the heartbeat's answer).
     */
    static void commit(KafkaConsumer<String, String> consumer) {
        for (int attempt = 1; ; attempt++) {
            try {
                consumer.commitSync();
                return;
            } catch (CommitFailedException e) {
                if (attempt == 20 || !String.valueOf(e.getMessage()).contains("stale member epoch")) {
                    throw e;
                }
                staleCommits.incrementAndGet();
                try {
                    Thread.sleep(100);
                } catch (InterruptedException interrupted) {
                    throw e;
                }
            }
        }
    }

    static final AtomicInteger staleCommits = new AtomicInteger();

    static Object joinAndLeave(String topic, String group) throws Exception {
        Map<String, Integer> seen = new ConcurrentHashMap<>();
        List<Member> members = new ArrayList<>();
        List<Member> all = new ArrayList<>();
        int produced = 0;
        List<String> steps = new ArrayList<>();
        for (int step = 0; step < 3; step++) {  // three members join, one at a time
            Member member = new Member(group, topic, seen);
            member.start();
            members.add(member);
            all.add(member);
            steps.add(step + 1 + " members: " + settle(members));
            produce(topic, "join" + step + "-", 120);
            produced += 120;
            waitFor(seen, produced, 60_000);
        }
        for (int step = 0; step < 2; step++) {  // two leave, one at a time; the last reads the rest
            Member leaving = members.remove(0);
            leaving.stop.set(true);
            leaving.join(30_000);
            steps.add("left, " + members.size() + " remain: " + settle(members));
            produce(topic, "leave" + step + "-", 120);
            produced += 120;
            waitFor(seen, produced, 60_000);
        }
        for (Member member : members) {
            member.stop.set(true);
            member.join(30_000);
        }
        for (Member member : all) {
            Checks.require(member.failure == null, "a member failed: " + member.failure);
        }
        List<String> duplicated = new ArrayList<>();
        seen.forEach((value, times) -> { if (times > 1) duplicated.add(value); });
        Checks.require(seen.size() == produced, "read " + seen.size() + " distinct records of " + produced);
        Checks.require(duplicated.isEmpty(), "read twice: " + duplicated);
        Map<String, Object> detail = new HashMap<>();
        detail.put("records", produced);
        detail.put("steps", steps);
        detail.put("stale_epoch_commits_retried", staleCommits.get());
        return detail;
    }

    /** Waits until the members own all six partitions between them, each some, none twice. */
    static String settle(List<Member> members) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (System.currentTimeMillis() < deadline) {
            Set<Integer> union = new TreeSet<>();
            int total = 0;
            boolean everyone = true;
            for (Member m : members) {
                Set<Integer> mine = new TreeSet<>(m.assigned);
                union.addAll(mine);
                total += mine.size();
                everyone &= !mine.isEmpty();
            }
            if (everyone && union.size() == 6 && total == 6) {
                return assignments(members);
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("the partitions never settled over the members: " + assignments(members));
    }

    static String assignments(List<Member> members) {
        List<String> parts = new ArrayList<>();
        for (Member m : members) {
            parts.add(new TreeSet<>(m.assigned).toString());
        }
        return String.join(" ", parts);
    }

    static void waitFor(Map<String, Integer> seen, int count, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (seen.size() < count && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        Checks.require(seen.size() >= count, "only " + seen.size() + " of " + count + " records read in time");
    }

    static Object describe(String topic, String group) throws Exception {
        Map<String, Integer> seen = new ConcurrentHashMap<>();
        Member a = new Member(group + "-d", topic, seen);
        Member b = new Member(group + "-d", topic, seen);
        a.start();
        b.start();
        try (Admin admin = admin()) {
            long deadline = System.currentTimeMillis() + 60_000;
            ConsumerGroupDescription found = null;
            while (System.currentTimeMillis() < deadline) {
                found = admin.describeConsumerGroups(List.of(group + "-d")).all().get(30, TimeUnit.SECONDS)
                    .get(group + "-d");
                int assigned = found.members().stream().mapToInt(m -> m.assignment().topicPartitions().size()).sum();
                if (found.members().size() == 2 && assigned == 6) {
                    break;
                }
                Thread.sleep(200);
            }
            Checks.require(found.type() == GroupType.CONSUMER, "type " + found.type());
            Checks.require(found.members().size() == 2, "members " + found.members());
            Set<TopicPartition> all = new TreeSet<>((x, y) -> x.toString().compareTo(y.toString()));
            for (MemberDescription m : found.members()) {
                all.addAll(m.assignment().topicPartitions());
            }
            Checks.require(all.size() == 6, "assigned " + all);
            Collection<ConsumerGroupListing> listed = admin.listConsumerGroups(
                new ListConsumerGroupsOptions().withTypes(Set.of(GroupType.CONSUMER))).all().get(30, TimeUnit.SECONDS);
            Checks.require(listed.stream().anyMatch(l -> l.groupId().equals(group + "-d")
                && l.type().orElse(null) == GroupType.CONSUMER), "listed " + listed);
            Collection<ConsumerGroupListing> classic = admin.listConsumerGroups(
                new ListConsumerGroupsOptions().withTypes(Set.of(GroupType.CLASSIC))).all().get(30, TimeUnit.SECONDS);
            Checks.require(classic.stream().noneMatch(l -> l.groupId().equals(group + "-d")), "classic " + classic);
            Map<String, Object> detail = new TreeMap<>();
            detail.put("type", found.type().toString());
            detail.put("state", found.state().toString());
            detail.put("assignor", found.partitionAssignor());
            detail.put("partitions", all.size());
            return detail;
        } finally {
            a.stop.set(true);
            b.stop.set(true);
            a.join(30_000);
            b.join(30_000);
        }
    }

    static Object pattern(String prefix) throws Exception {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(prefix + "-a", 2, (short) 3))).all().get(30, TimeUnit.SECONDS);
        }
        Map<String, Integer> seen = new ConcurrentHashMap<>();
        try (KafkaConsumer<String, String> consumer = consumer(prefix + "-group")) {
            consumer.subscribe(Pattern.compile(Pattern.quote(prefix) + "-.*"));
            produce(prefix + "-a", "a", 10, 2);
            pollUntil(consumer, seen, 10);
            try (Admin admin = admin()) {
                admin.createTopics(List.of(new NewTopic(prefix + "-b", 2, (short) 3))).all().get(30, TimeUnit.SECONDS);
            }
            produce(prefix + "-b", "b", 10, 2);
            pollUntil(consumer, seen, 20);
            Set<String> topics = new TreeSet<>();
            consumer.assignment().forEach(tp -> topics.add(tp.topic()));
            Checks.require(topics.contains(prefix + "-b"), "assigned " + topics);
            return topics.toString();
        }
    }

    static void pollUntil(KafkaConsumer<String, String> consumer, Map<String, Integer> seen, int count) {
        long deadline = System.currentTimeMillis() + 60_000;
        while (seen.size() < count && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                seen.merge(r.value(), 1, Integer::sum);
            }
            consumer.commitSync();
        }
        Checks.require(seen.size() >= count, "read " + seen.size() + " of " + count);
    }

    /** The member the Python side disturbs: reads until `count` distinct records, committing as it goes. */
    static void consumeUntil(String topic, String group, int count, long timeoutMs) {
        Checks.check("consume_until", () -> {
            Map<String, Integer> seen = new HashMap<>();
            int commitErrors = 0;
            try (KafkaConsumer<String, String> consumer = consumer(group)) {
                consumer.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + timeoutMs;
                while (seen.size() < count && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                        seen.merge(r.value(), 1, Integer::sum);
                    }
                    try {
                        consumer.commitSync(Duration.ofSeconds(30));
                    } catch (RuntimeException e) {
                        commitErrors++;  // the coordinator died under it: the next commit covers these records
                    }
                    System.out.println("{\"progress\":" + seen.size() + "}");
                    System.out.flush();
                }
            }
            Map<String, Object> detail = new TreeMap<>();
            detail.put("distinct", seen.size());
            detail.put("total", seen.values().stream().mapToInt(Integer::intValue).sum());
            detail.put("commit_errors", commitErrors);
            return detail;
        });
    }
}
