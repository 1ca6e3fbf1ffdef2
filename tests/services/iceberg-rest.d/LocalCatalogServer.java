// The main class of tests/services/iceberg-rest: Apache Iceberg's REST
// catalog test fixture (iceberg-open-api's test-fixtures jar, and the
// RESTCatalogAdapter and RESTCatalogServlet of iceberg-core's tests jar)
// served on one address only.  The fixture's own main class,
// RESTCatalogServer, listens on every interface and has no setting for
// that; this one is the same catalog, configured the same way, on the host
// given as its argument (the script passes 127.0.0.1).
//
// Configuration, as the fixture's: every CATALOG_* environment variable is
// a catalog property (RCKUtils.environmentCatalogConfig: CATALOG_ dropped,
// "__" -> "-", "_" -> ".", lowercase; e.g. CATALOG_IO__IMPL -> io-impl,
// CATALOG_S3_ENDPOINT -> s3.endpoint), and rest.port (CATALOG_REST_PORT) is
// the port.  The script sets catalog-impl, uri, warehouse and rest.port
// itself: nothing has a default here.
//
// It lives in the fixture's package because the pieces it reuses
// (RCKUtils, RESTServerCatalogAdapter, RESTCatalogServer.CatalogContext)
// are package-private there.  Compiled once by the script (javac) against
// the fixture's jars.
package org.apache.iceberg.rest;

import java.net.InetSocketAddress;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

public final class LocalCatalogServer {
    private LocalCatalogServer() {}

    private static String need(Map<String, String> props, String key) {
        String v = props.get(key);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException("catalog property " + key + " is not set");
        }
        return v;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: LocalCatalogServer HOST  (settings: CATALOG_* variables)");
            System.exit(2);
        }
        Map<String, String> props = RCKUtils.environmentCatalogConfig();
        need(props, CatalogProperties.CATALOG_IMPL);
        need(props, CatalogProperties.URI);
        need(props, CatalogProperties.WAREHOUSE_LOCATION);
        int port = Integer.parseInt(need(props, RESTCatalogServer.REST_PORT));
        String name = props.getOrDefault(RESTCatalogServer.CATALOG_NAME, "rest_backend");

        Catalog catalog = CatalogUtil.buildIcebergCatalog(name, props, new Configuration());
        RESTCatalogAdapter adapter =
                new RESTServerCatalogAdapter(new RESTCatalogServer.CatalogContext(catalog, props));

        ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
        context.addServlet(new ServletHolder(new RESTCatalogServlet(adapter)), "/*");
        Server server = new Server(new InetSocketAddress(args[0], port));
        server.setHandler(context);
        server.start();
        System.err.println("zx: Iceberg REST catalog " + name + " on http://" + args[0] + ":"
                + port + ", warehouse " + props.get(CatalogProperties.WAREHOUSE_LOCATION));
        server.join();
    }
}
