-- pg_cdc_load.sql — the pgbench transaction of pg_cdc_bench.sh's streaming
-- load on bench_src: one insert (a new id from bench_ins_seq, above the
-- copied rows), one update of a random copied row (ids 1..:nrows, never
-- deleted, so it always finds its row), one delete of the row inserted
-- 1000 inserts earlier (found once the load has made 1000 rows): three
-- changes per transaction, each found by the primary key.  pgbench
-- -D nrows=N sets :nrows.
\set uid random(1, :nrows)
BEGIN;
INSERT INTO bench_src (id, qty, amount, label, created_at, active, score, ref, attrs, day)
  VALUES (nextval('bench_ins_seq'), :uid % 1000, (:uid % 100000) / 100.0, 'stream-' || md5(:uid::text),
          now(), :uid % 2 = 0, random(), gen_random_uuid(), jsonb_build_object('k', :uid % 100, 'tag', 'live'),
          current_date)
  RETURNING id AS newid \gset
UPDATE bench_src SET qty = qty + 1, amount = amount + 0.01, score = random(), created_at = now()
  WHERE id = :uid;
DELETE FROM bench_src WHERE id = CAST(:newid AS bigint) - 1000;
END;
