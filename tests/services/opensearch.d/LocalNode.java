/*
 * LocalNode — one OpenSearch node for zx's tests (tests/services/opensearch),
 * from Maven Central's jars, without the distribution's launcher: the server
 * (org.opensearch.node.Node) with the netty4 HTTP and transport plug-in
 * and the reindex module (_delete_by_query) given on the classpath (Node's protected constructor takes plug-in
 * classes, as the test framework's MockNode does).  Single-node discovery,
 * no security plug-in, HTTP and transport on 127.0.0.1 only.
 *
 * Usage: java -cp ... org.opensearch.zx.LocalNode HOME HTTP_PORT TRANSPORT_PORT
 *   HOME: path.home (data in HOME/data, logs in HOME/logs, an empty
 *   HOME/config).  Runs until SIGTERM, which closes the node.
 */
package org.opensearch.zx;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.index.reindex.ReindexPlugin;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

public final class LocalNode extends Node {
    private LocalNode(Environment env, Collection<Class<? extends Plugin>> plugins) {
        super(env, plugins, true);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: LocalNode HOME HTTP_PORT TRANSPORT_PORT");
            System.exit(2);
        }
        Path home = Paths.get(args[0]).toAbsolutePath();
        Files.createDirectories(home.resolve("config"));
        Files.createDirectories(home.resolve("data"));
        Files.createDirectories(home.resolve("logs"));
        Settings settings = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("cluster.name", "zx-test")
            .put("node.name", "zx-node")
            .put("discovery.type", "single-node")
            .put("network.host", "127.0.0.1")
            .put("http.port", args[1])
            .put("transport.port", args[2])
            .put("http.type", "netty4")
            .put("transport.type", "netty4")
            /* a test node on a shared disk: never go read-only because
             * the disk is nearly full */
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("action.auto_create_index", true)
            .build();
        LogConfigurator.registerErrorListener();
        LogConfigurator.setNodeName("zx-node");
        LogConfigurator.configureWithoutConfig(settings);
        Environment env = InternalSettingsPreparer.prepareEnvironment(settings,
            Collections.emptyMap(), home.resolve("config"), () -> "zx-node");
        List<Class<? extends Plugin>> plugins = List.of(Netty4Plugin.class, ReindexPlugin.class);
        LocalNode node = new LocalNode(env, plugins);
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
            } catch (Exception e) {
                e.printStackTrace();
            }
            done.countDown();
        }));
        node.start();
        System.out.println("zx: node started");
        done.await();
    }
}
