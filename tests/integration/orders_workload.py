"""PostgreSQL's orders table changed by a workload of inserts, updates, key
moves and deletes (one transaction each), and a SyncZxd with a pipeline
mirroring it: shared by the fan-out test and the forward test."""
import random
import time

from sync_fixtures import SyncZxd

COLS = ("id", "customer", "cents", "status")


class MirrorZxd(SyncZxd):
    """A SyncZxd with the pipeline mirroring orders (`mirror`: its YAML
    lines, from a leg) among its pipelines."""

    mirror = ""

    def config_text(self):
        text = super().config_text()
        at = text.index("\nauthors:\n") + 1
        return text[:at] + self.mirror + text[at:]


def source_rows(pg, db):
    return sorted(pg.query(db, "SELECT id, customer, cents, status FROM orders"))


def workload(pg, db, seed, touched, n_ops):
    """Inserts, updates, key moves and deletes, one transaction each."""
    r = random.Random(seed)
    next_id = 100000
    with pg.connect(db) as conn:
        for _ in range(n_ops):
            time.sleep(0.004)     # spread over seconds, so runs overlap it
            ids = [row[0] for row in conn.execute(
                "SELECT id FROM orders ORDER BY random() LIMIT 1").fetchall()]
            op = r.random()
            if op < 0.3 or not ids:
                next_id += 1
                conn.execute("INSERT INTO orders VALUES (%s, %s, %s, 'new')",
                             (next_id, f"c{r.randint(1, 50)}", r.randint(0, 10**6)))
                touched.add(next_id)
            elif op < 0.7:
                conn.execute("UPDATE orders SET cents = cents + 1, status = %s WHERE id = %s",
                             (r.choice(["paid", "shipped", "refunded"]), ids[0]))
                touched.add(ids[0])
            elif op < 0.85:
                next_id += 1
                conn.execute("UPDATE orders SET id = %s WHERE id = %s", (next_id, ids[0]))
                touched.update((ids[0], next_id))
            else:
                conn.execute("DELETE FROM orders WHERE id = %s", (ids[0],))
                touched.add(ids[0])
