import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;

/**
 * One member with group.protocol=consumer joining a group that classic members already consume (args: brokers topic
 * group): the coordinator converts the classic group online (KIP-848 migration). It reads and commits (commitSync)
 * until a line arrives on stdin, then closes (leaving the group, which converts it back to classic) and reports every
 * value it read. Progress lines {"assigned": n, "read": m} let the Python side follow it.
 */
public final class Migration {
    public static void main(String[] args) throws Exception {
        ConsumerProtocol.brokers = args[0];
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                in.readLine();
            } catch (Exception e) {
                // a closed stdin stops the member as well
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        Checks.check("migration_member", () -> {
            List<String> values = new ArrayList<>();
            int assigned = -1;
            try (KafkaConsumer<String, String> consumer = ConsumerProtocol.consumer(args[2])) {
                consumer.subscribe(List.of(args[1]));
                while (!stop.get()) {
                    boolean read = false;
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                        values.add(r.value());
                        read = true;
                    }
                    if (read) {
                        ConsumerProtocol.commit(consumer);
                    }
                    int now = consumer.assignment().size();
                    if (read || now != assigned) {
                        assigned = now;
                        System.out.println("{\"assigned\":" + assigned + ",\"read\":" + values.size() + "}");
                        System.out.flush();
                    }
                }
            }
            Map<String, Object> detail = new TreeMap<>();
            detail.put("values", values);
            detail.put("stale_commits", ConsumerProtocol.staleCommits.get());
            return detail;
        });
    }
}
