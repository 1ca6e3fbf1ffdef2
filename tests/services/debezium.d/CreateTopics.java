// Creates Kafka topics that do not exist yet, for tests/services/debezium
// (the broker of tests/services/kafka has auto.create.topics.enable=false
// and Debezium Server's kafka sink cannot create them).  Built once with
// javac against the kafka-clients jar of the Debezium Server dist.
//
// Usage: java -cp <classes>:<dist>/lib/* CreateTopics BOOTSTRAP PARTITIONS TOPIC...
// Connects with PLAINTEXT; extra AdminClient properties (SASL, TLS) may come
// as -Dzx.admin.<property>=<value> system properties.
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;

public class CreateTopics {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: CreateTopics BOOTSTRAP PARTITIONS TOPIC...");
            System.exit(2);
        }
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        for (String k : System.getProperties().stringPropertyNames()) {
            if (k.startsWith("zx.admin.")) {
                p.put(k.substring(9), System.getProperty(k));
            }
        }
        int partitions = Integer.parseInt(args[1]);
        List<NewTopic> topics = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            topics.add(new NewTopic(args[i], partitions, (short) 1));
        }
        int failed = 0;
        try (Admin admin = Admin.create(p)) {
            var result = admin.createTopics(topics).values();
            for (var e : result.entrySet()) {
                try {
                    e.getValue().get();
                    System.err.println("debezium: created topic " + e.getKey());
                }
                catch (ExecutionException ex) {
                    if (ex.getCause() instanceof TopicExistsException) {
                        System.err.println("debezium: topic " + e.getKey() + " exists already");
                    }
                    else {
                        System.err.println("debezium: could not create topic " + e.getKey() + ": " + ex.getCause());
                        failed++;
                    }
                }
            }
        }
        System.exit(failed == 0 ? 0 : 1);
    }
}
