/*
 * dest_mysql.c — the MySQL / MariaDB table destination (dest.h), through
 * libmariadb's text protocol.
 *
 * Connection: a connection of kind mysql, conn->dsn a URI parsed by
 * common/mysql_dsn.h (host "localhost" means libmariadb's unix socket);
 * ?ssl=true asks for TLS (MYSQL_OPT_SSL_ENFORCE, server certificate not
 * verified).  Every network wait is bounded by args->deadline_ms, rounded
 * up to whole seconds, at least 1 (30 s when it is 0 or less): connect,
 * read and write timeouts, and the server's innodb_lock_wait_timeout and
 * lock_wait_timeout.  No automatic reconnection (it would lose the run's
 * transaction without a word).  The session: utf8mb4, time_zone '+00:00',
 * sql_mode 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION' (a value the column
 * cannot hold exactly is an error, never a silent truncation or a zero
 * date; a table never silently becomes non-transactional).  Values go
 * through the rules every destination shares (common/dcell.h) first,
 * with MySQL's limits: DOUBLE holds no NaN nor infinity, text and JSON may
 * hold NUL, a key text column its VARCHAR's characters.  So a misfit
 * becomes NULL and is noted (dest.h: the run then fails) here, and the
 * server's checks only fire on a table made by someone else.
 *
 * Table: args->table is "db.table" or "table" (the DSN's database), split
 * at the first '.'; identifiers are quoted with backticks (a backtick
 * doubled).  begin makes it when missing (InnoDB, ROW_FORMAT=DYNAMIC,
 * utf8mb4), with a PRIMARY KEY on the key columns, types:
 *     text       LONGTEXT          (key: VARCHAR(n), see below)
 *     int64      BIGINT
 *     double     DOUBLE
 *     bool       BOOLEAN (TINYINT(1): 0 / 1)
 *     timestamp  DATETIME(6), UTC (TIMESTAMP stops in 2038)
 *     date       DATE
 *     decimal    DECIMAL(p,s); MySQL's scale stops at 30: s > 30 gives
 *                DECIMAL(p-s+30, 30), values rounded to 30 fraction
 *                digits
 *     json       JSON (MariaDB: LONGTEXT with a JSON_VALID check)
 *                (key: VARCHAR(n))
 *     bytes      LONGBLOB          (key: VARBINARY(n))
 * A primary key cannot hold a LONGTEXT, and InnoDB's key is at most 3072
 * bytes: key text, json and bytes columns share what the other key
 * columns leave of it equally (one text key: VARCHAR(768), 4 bytes a
 * character), with a binary collation that keeps trailing spaces
 * (MariaDB utf8mb4_nopad_bin, MySQL 8 utf8mb4_0900_bin; older MySQL
 * utf8mb4_bin, which ignores trailing spaces), so that keys compare byte
 * for byte as zx compares them.  A NULL or misfit key value (a text
 * longer than its VARCHAR) fails the run: a primary key cannot hold NULL.
 * A table that exists gets ALTER TABLE ADD COLUMN for the columns it
 * lacks (names compared without ASCII case, as MySQL does); its engine
 * must be transactional, and in upsert and mirror mode it must have a
 * primary key or unique index on exactly the key columns (else ON
 * DUPLICATE KEY UPDATE would add rows).
 *
 * Run: DDL first (it commits implicitly), then START TRANSACTION; replace
 * deletes every row inside it (DELETE, not TRUNCATE, which commits), so
 * readers see the old rows until COMMIT.  write batches rows into
 * multi-row INSERT (append, replace) or INSERT ... ON DUPLICATE KEY
 * UPDATE c = VALUES(c) (upsert, mirror) statements of up to 4 MiB (less
 * when the server's max_allowed_packet is smaller; one row may take up to
 * max_allowed_packet - 1 KiB), carried over between write calls and sent
 * when full, before delete_keys and at commit.  delete_keys sends DELETE
 * ... WHERE k IN (...) / (k1, k2) IN ((...), ...) in statements of the
 * same size.  Values are SQL literals: integers bare, doubles with 17
 * digits and an exponent (a double literal, read back exactly), decimals
 * as plain literals rounded half away from zero to the scale (MySQL reads
 * a literal with an exponent as an approximate double), text
 * mysql_real_escape_string'd in quotes, bytes as X'hex', timestamps as
 * 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC).
 *
 * It must never: print a password (messages use conn->dsn_shown only),
 * reconnect, send DDL inside the run's transaction, or block longer than
 * the deadline on one network wait.
 */
#include "workers/destinations/dest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#include "common/dcell.h"
#include "common/mysql_dsn.h"
#include "common/util.h"
#include "workers/destinations/mysql/dest_mysql_int.h"
#include "workers/destinations/dest_table.h"

#define MY_STMT_TARGET   (4u << 20)  /* bytes of one INSERT / DELETE */
#define MY_PACKET_SLACK  1024        /* room left in max_allowed_packet */
#define MY_KEY_BYTES     3072        /* InnoDB's longest key (DYNAMIC) */
#define MY_IDENT_MAX     64          /* bytes of a database / table name */
#define MY_MAX_WAIT      86400       /* s, the most a deadline is taken as */

/* ---- the state ------------------------------------------------------- */

typedef struct mcol {
    const char *name;      /* the run's column name (valid for the run) */
    zx_dtype type;
    zx_dc_target target;   /* what the column takes (common/dcell.h) */
    int prec, scale;       /* decimal, as made (MySQL's limits applied) */
    int key;               /* 1 + position in key_cols, or 0 */
    unsigned keylen;       /* key text/json: VARCHAR characters; key
                              bytes: VARBINARY bytes */
} mcol;

typedef struct my_state {
    MYSQL *db;
    zx_mysql_dsn dsn;
    const char *conn_name;
    const char *dsn_shown;
    char *dbname, *tname;  /* where the rows go */
    char *label;           /* "mysql NAME table db.t" */
    zx_mysql_buf qname;            /* `db`.`t` */
    unsigned wait_s;
    size_t max_row;        /* max_allowed_packet - slack */
    size_t target;         /* statement size aimed at */
    const char *key_collation;

    /* the run (begin .. commit / abort) */
    const zx_dest_run *run;
    zx_dest_stats *stats;
    mcol *cols;
    size_t ncols;
    size_t *keyix;         /* key_cols[i] is cols[keyix[i]] */
    int in_txn;            /* START TRANSACTION sent, no COMMIT/ROLLBACK */
    int gone;              /* the connection is lost: no ROLLBACK */
    zx_mysql_buf head, tail;       /* INSERT ... VALUES / ON DUPLICATE KEY UPDATE */
    zx_mysql_buf stmt;             /* the statement being filled */
    size_t pending;        /* rows in stmt */
    zx_mysql_buf row;
    zx_buf conv;        /* zx_dc_convert's scratch */
    zx_value *vals;
    size_t vals_cap;
} my_state;

/* ---- errors ------------------------------------------------------------ */

/* The connection's last error, with what was being done.  Marks the
 * connection gone when the error says so. */
static int fail_db(my_state *st, char *err, size_t errlen, const char *what)
{
    unsigned no = mysql_errno(st->db);
    if (no == CR_SERVER_GONE_ERROR || no == CR_SERVER_LOST || no == ER_CONNECTION_KILLED ||
        no == CR_CONNECTION_ERROR || no == CR_CONN_HOST_ERROR)
        st->gone = 1;
    return zx_dt_fail(st->label, err, errlen, "%s: %s (%u)", what, mysql_error(st->db), no);
}

static int query(my_state *st, const char *sql, size_t n, char *err, size_t errlen,
                 const char *what)
{
    if (st->gone)
        return zx_dt_fail(st->label, err, errlen, "%s: the connection to the server was lost "
                          "earlier", what);
    if (mysql_real_query(st->db, sql, n) != 0)
        return fail_db(st, err, errlen, what);
    return 0;
}

static int query_sb(my_state *st, zx_mysql_buf *b, char *err, size_t errlen, const char *what)
{
    if (b->oom)
        return zx_dt_fail(st->label, err, errlen, "%s: out of memory", what);
    return query(st, b->p, b->len, err, errlen, what);
}

/* Runs a SELECT and stores its result; NULL on error (err set). */
static MYSQL_RES *select_rows(my_state *st, zx_mysql_buf *b, char *err, size_t errlen, const char *what)
{
    if (query_sb(st, b, err, errlen, what) < 0)
        return NULL;
    MYSQL_RES *res = mysql_store_result(st->db);
    if (!res)
        fail_db(st, err, errlen, what);
    return res;
}

/* ---- open / close ------------------------------------------------------ */

static void my_close(void *state)
{
    my_state *st = state;
    if (!st)
        return;
    if (st->db)
        mysql_close(st->db);
    zx_mysql_dsn_free(&st->dsn);
    free(st->dbname);
    free(st->tname);
    free(st->label);
    zx_mysql_buf_free(&st->qname);
    free(st->cols);
    free(st->keyix);
    zx_mysql_buf_free(&st->head);
    zx_mysql_buf_free(&st->tail);
    zx_mysql_buf_free(&st->stmt);
    zx_mysql_buf_free(&st->row);
    zx_buf_free(&st->conv);
    free(st->vals);
    free(st);
}

/* st->dbname, st->tname, st->qname and st->label from the table name */
static int name_table(my_state *st, const char *table, char *err, size_t errlen)
{
    const char *name = st->conn_name;
    if (!*table)
        return zx_seterr(err, errlen, "mysql %s: no table given", name);
    if (zx_dt_split_name(table, st->dsn.database, &st->dbname, &st->tname) < 0)
        return zx_seterr(err, errlen, "mysql %s table %s: out of memory", name, table);
    if (!*st->dbname || !*st->tname || strlen(st->dbname) > MY_IDENT_MAX ||
        strlen(st->tname) > MY_IDENT_MAX)
        return zx_seterr(err, errlen,
                         "mysql %s table %s: not db.table or table, each 1 to 64 bytes",
                         name, table);
    if (!(st->label = zx_dt_label("mysql", name, st->dbname, st->tname)))
        return zx_seterr(err, errlen, "mysql %s table %s: out of memory", name, table);
    zx_mysql_buf_ident(&st->qname, st->dbname);
    zx_mysql_buf_ch(&st->qname, '.');
    zx_mysql_buf_ident(&st->qname, st->tname);
    if (st->qname.oom)
        return zx_dt_fail(st->label, err, errlen, "out of memory");
    return 0;
}

static int my_open(const zx_dest_args *a, void **state, char *err, size_t errlen)
{
    *state = NULL;
    if (zx_dt_open_check("mysql", a, 1, err, errlen) < 0)
        return -1;
    const zx_conf_connection *conn = a->conn;
    my_state *st = calloc(1, sizeof(*st));
    if (!st)
        return zx_seterr(err, errlen, "mysql connection %s: out of memory", conn->name);
    st->conn_name = conn->name;
    st->dsn_shown = conn->dsn_shown ? conn->dsn_shown : "(dsn hidden)";
    const char *why = NULL;
    if (zx_mysql_dsn_parse(conn->dsn, &st->dsn, &why) < 0) {
        zx_seterr(err, errlen, "mysql connection %s: dsn %s: %s", st->conn_name,
                  st->dsn_shown, why);
        goto failed;
    }
    if (name_table(st, a->table, err, errlen) < 0)
        goto failed;

    int64_t ms = zx_dt_deadline_ms(a);
    st->wait_s = ms >= (int64_t)MY_MAX_WAIT * 1000 ? MY_MAX_WAIT : (unsigned)((ms + 999) / 1000);
    if (st->wait_s < 1)
        st->wait_s = 1;

    st->db = mysql_init(NULL);
    if (!st->db) {
        zx_dt_fail(st->label, err, errlen, "out of memory (mysql_init)");
        goto failed;
    }
    my_bool off = 0, on = 1;
    unsigned int w = st->wait_s;
    mysql_options(st->db, MYSQL_OPT_CONNECT_TIMEOUT, &w);
    mysql_options(st->db, MYSQL_OPT_READ_TIMEOUT, &w);
    mysql_options(st->db, MYSQL_OPT_WRITE_TIMEOUT, &w);
    mysql_options(st->db, MYSQL_OPT_RECONNECT, &off);
    mysql_options(st->db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (st->dsn.ssl == 1)
        mysql_options(st->db, MYSQL_OPT_SSL_ENFORCE, &on);
    if (!mysql_real_connect(st->db, st->dsn.host, st->dsn.user, st->dsn.password,
                            st->dsn.database, st->dsn.port, NULL, 0)) {
        zx_dt_fail(st->label, err, errlen, "connecting to %s: %s (%u)", st->dsn_shown,
                   mysql_error(st->db), mysql_errno(st->db));
        goto failed;
    }

    char set[256];
    int n = snprintf(set, sizeof(set),
                     "SET SESSION time_zone = '+00:00', "
                     "sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION', "
                     "innodb_lock_wait_timeout = %u, lock_wait_timeout = %u, autocommit = 1",
                     st->wait_s, st->wait_s);
    if (query(st, set, (size_t)n, err, errlen, "setting up the session") < 0)
        goto failed;

    zx_mysql_buf q = {0};
    zx_mysql_buf_str(&q, "SELECT @@max_allowed_packet");
    MYSQL_RES *res = select_rows(st, &q, err, errlen, "reading max_allowed_packet");
    zx_mysql_buf_free(&q);
    if (!res)
        goto failed;
    MYSQL_ROW r = mysql_fetch_row(res);
    unsigned long long pkt = r && r[0] ? strtoull(r[0], NULL, 10) : 0;
    mysql_free_result(res);
    if (pkt < 64 * 1024) /* the server's own minimum is 1 KiB: be safe */
        pkt = 64 * 1024;
    if (pkt > (1ull << 30))
        pkt = 1ull << 30;
    st->max_row = (size_t)pkt - MY_PACKET_SLACK;
    st->target = st->max_row < MY_STMT_TARGET ? st->max_row : MY_STMT_TARGET;

    const char *info = mysql_get_server_info(st->db);
    unsigned long ver = mysql_get_server_version(st->db);
    if (info && strstr(info, "MariaDB"))
        st->key_collation = "utf8mb4_nopad_bin";
    else if (ver >= 80000)
        st->key_collation = "utf8mb4_0900_bin";
    else
        st->key_collation = "utf8mb4_bin";
    *state = st;
    return 0;

failed:
    my_close(st);
    return -1;
}

/* ---- begin --------------------------------------------------------------- */

/* ASCII case-insensitive equality (MySQL's column names) */
static int name_eq(const char *a, const char *b)
{
    for (;; a++, b++) {
        unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
        if (x >= 'A' && x <= 'Z')
            x = (unsigned char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z')
            y = (unsigned char)(y - 'A' + 'a');
        if (x != y)
            return 0;
        if (!x)
            return 1;
    }
}

/* The run's columns as this table makes them. */
static int plan_columns(my_state *st, const zx_dest_run *run, char *err, size_t errlen)
{
    free(st->cols);
    free(st->keyix);
    st->ncols = run->ncols;
    st->cols = calloc(run->ncols ? run->ncols : 1, sizeof(*st->cols));
    st->keyix = calloc(run->nkey_cols ? run->nkey_cols : 1, sizeof(*st->keyix));
    if (!st->cols || !st->keyix)
        return zx_dt_fail(st->label, err, errlen, "out of memory");
    if (zx_dt_check_run(st->label, run, st->keyix, err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < run->ncols; i++) {
        const zx_dcol *d = &run->cols[i];
        mcol *c = &st->cols[i];
        c->name = d->name;
        c->type = d->type;
        if ((unsigned)d->type >= ZX_DT__COUNT)
            return zx_dt_fail(st->label, err, errlen, "column %s: unknown type %d", d->name,
                              (int)d->type);
        if (d->type == ZX_DT_DECIMAL) {
            if (d->precision < 1 || d->precision > 65 || d->scale < 0 ||
                d->scale > d->precision)
                return zx_dt_fail(st->label, err, errlen,
                                  "column %s: decimal(%d,%d) is not a precision 1..65 and a "
                                  "scale 0..precision", d->name, d->precision, d->scale);
            c->scale = d->scale > 30 ? 30 : d->scale;
            c->prec = d->precision - d->scale + c->scale;
        }
        c->target = zx_dc_target_of(d->type, c->prec, c->scale);
        c->target.nan_ok = c->target.inf_ok = 0; /* DOUBLE holds neither */
        c->target.nul_ok = 1;                    /* LONGTEXT and JSON hold NUL */
    }
    /* the key, and what its string-like columns may take of 3072 bytes */
    size_t budget = MY_KEY_BYTES, nstr = 0;
    for (size_t k = 0; k < run->nkey_cols; k++) {
        size_t i = st->keyix[k];
        st->cols[i].key = (int)k + 1;
        switch (st->cols[i].type) {
        case ZX_DT_TEXT:
        case ZX_DT_JSON:
        case ZX_DT_BYTES:
            nstr++;
            break;
        case ZX_DT_DECIMAL:
            budget -= budget > 32 ? 32 : budget;
            break;
        case ZX_DT_BOOL:
            budget -= budget > 1 ? 1 : budget;
            break;
        case ZX_DT_DATE:
            budget -= budget > 3 ? 3 : budget;
            break;
        default:
            budget -= budget > 8 ? 8 : budget;
            break;
        }
    }
    for (size_t k = 0; k < run->nkey_cols; k++) {
        mcol *c = &st->cols[st->keyix[k]];
        size_t share = nstr ? budget / nstr : 0;
        if (c->type == ZX_DT_BYTES)
            c->keylen = (unsigned)(share ? share : 1);
        else if (c->type == ZX_DT_TEXT || c->type == ZX_DT_JSON)
            c->keylen = (unsigned)(share / 4 ? share / 4 : 1);
        if (c->type == ZX_DT_TEXT)
            c->target.max_chars = c->keylen;
    }
    return 0;
}

/* `name` TYPE */
static void column_ddl(my_state *st, zx_mysql_buf *b, const mcol *c)
{
    zx_mysql_buf_ident(b, c->name);
    switch (c->type) {
    case ZX_DT_TEXT:
    case ZX_DT_JSON:
        if (c->key)
            zx_mysql_buf_printf(b, " VARCHAR(%u) CHARACTER SET utf8mb4 COLLATE %s", c->keylen,
                      st->key_collation);
        else
            zx_mysql_buf_str(b, c->type == ZX_DT_JSON ? " JSON" : " LONGTEXT");
        break;
    case ZX_DT_INT64:
        zx_mysql_buf_str(b, " BIGINT");
        break;
    case ZX_DT_DOUBLE:
        zx_mysql_buf_str(b, " DOUBLE");
        break;
    case ZX_DT_BOOL:
        zx_mysql_buf_str(b, " BOOLEAN");
        break;
    case ZX_DT_TIMESTAMP:
        zx_mysql_buf_str(b, " DATETIME(6)");
        break;
    case ZX_DT_DATE:
        zx_mysql_buf_str(b, " DATE");
        break;
    case ZX_DT_DECIMAL:
        zx_mysql_buf_printf(b, " DECIMAL(%d,%d)", c->prec, c->scale);
        break;
    case ZX_DT_BYTES:
        if (c->key)
            zx_mysql_buf_printf(b, " VARBINARY(%u)", c->keylen);
        else
            zx_mysql_buf_str(b, " LONGBLOB");
        break;
    default:
        break;
    }
    if (c->key)
        zx_mysql_buf_str(b, " NOT NULL");
}

static int create_table(my_state *st, char *err, size_t errlen)
{
    const zx_dest_run *run = st->run;
    zx_mysql_buf b = {0};
    zx_mysql_buf_str(&b, "CREATE TABLE IF NOT EXISTS ");
    zx_mysql_buf_put(&b, st->qname.p, st->qname.len);
    zx_mysql_buf_str(&b, " (");
    for (size_t i = 0; i < st->ncols; i++) {
        if (i)
            zx_mysql_buf_str(&b, ", ");
        column_ddl(st, &b, &st->cols[i]);
    }
    if (run->nkey_cols) {
        zx_mysql_buf_str(&b, ", PRIMARY KEY (");
        for (size_t k = 0; k < run->nkey_cols; k++) {
            if (k)
                zx_mysql_buf_str(&b, ", ");
            zx_mysql_buf_ident(&b, run->key_cols[k]);
        }
        zx_mysql_buf_ch(&b, ')');
    }
    zx_mysql_buf_str(&b, ") ENGINE=InnoDB ROW_FORMAT=DYNAMIC DEFAULT CHARSET=utf8mb4");
    int rc = query_sb(st, &b, err, errlen, "creating the table");
    zx_mysql_buf_free(&b);
    return rc;
}

/* The table exists (now): check its engine, add the columns it lacks, and
 * in upsert / mirror mode check its key. */
static int check_table(my_state *st, char *err, size_t errlen)
{
    const zx_dest_run *run = st->run;
    int rc = -1;
    MYSQL_RES *res = NULL;
    MYSQL_ROW r;
    char *have = NULL;
    zx_mysql_buf b = {0};

    zx_mysql_buf_str(&b, "SELECT t.TABLE_TYPE, t.ENGINE, e.TRANSACTIONS FROM information_schema.TABLES t "
               "LEFT JOIN information_schema.ENGINES e ON e.ENGINE = t.ENGINE "
               "WHERE t.TABLE_SCHEMA = ");
    zx_mysql_buf_quoted(st->db, &b, st->dbname, strlen(st->dbname));
    zx_mysql_buf_str(&b, " AND t.TABLE_NAME = ");
    zx_mysql_buf_quoted(st->db, &b, st->tname, strlen(st->tname));
    if (!(res = select_rows(st, &b, err, errlen, "reading the table's engine")))
        goto done;
    r = mysql_fetch_row(res);
    if (!r) {
        zx_dt_fail(st->label, err, errlen, "the table is not in information_schema after "
                   "CREATE TABLE");
        goto done;
    }
    if (!r[0] || strcmp(r[0], "BASE TABLE") != 0) {
        zx_dt_fail(st->label, err, errlen, "it is a %s, not a table", r[0] ? r[0] : "view");
        goto done;
    }
    if (!r[2] || strcmp(r[2], "YES") != 0) {
        zx_dt_fail(st->label, err, errlen, "its engine %s has no transactions: zx needs one "
                   "(ALTER TABLE ... ENGINE=InnoDB)", r[1] ? r[1] : "?");
        goto done;
    }
    mysql_free_result(res);
    res = NULL;

    /* columns it has */
    have = calloc(st->ncols, 1);
    if (!have) {
        zx_dt_fail(st->label, err, errlen, "out of memory");
        goto done;
    }
    b.len = 0;
    zx_mysql_buf_str(&b, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ");
    zx_mysql_buf_quoted(st->db, &b, st->dbname, strlen(st->dbname));
    zx_mysql_buf_str(&b, " AND TABLE_NAME = ");
    zx_mysql_buf_quoted(st->db, &b, st->tname, strlen(st->tname));
    if (!(res = select_rows(st, &b, err, errlen, "reading the table's columns")))
        goto done;
    while ((r = mysql_fetch_row(res)) != NULL)
        for (size_t i = 0; i < st->ncols; i++)
            if (r[0] && name_eq(r[0], st->cols[i].name))
                have[i] = 1;
    mysql_free_result(res);
    res = NULL;
    b.len = 0;
    zx_mysql_buf_str(&b, "ALTER TABLE ");
    zx_mysql_buf_put(&b, st->qname.p, st->qname.len);
    size_t added = 0;
    for (size_t i = 0; i < st->ncols; i++) {
        if (have[i])
            continue;
        zx_mysql_buf_str(&b, added++ ? ", ADD COLUMN " : " ADD COLUMN ");
        mcol c = st->cols[i];
        c.key = 0; /* a column added later is not in the table's key */
        column_ddl(st, &b, &c);
    }
    if (added && query_sb(st, &b, err, errlen, "adding columns") < 0)
        goto done;

    if (zx_dt_keyed(run->mode)) {
        /* a unique index on exactly the key columns */
        b.len = 0;
        zx_mysql_buf_str(&b, "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
                   "WHERE NON_UNIQUE = 0 AND TABLE_SCHEMA = ");
        zx_mysql_buf_quoted(st->db, &b, st->dbname, strlen(st->dbname));
        zx_mysql_buf_str(&b, " AND TABLE_NAME = ");
        zx_mysql_buf_quoted(st->db, &b, st->tname, strlen(st->tname));
        zx_mysql_buf_str(&b, " ORDER BY INDEX_NAME, SEQ_IN_INDEX");
        if (!(res = select_rows(st, &b, err, errlen, "reading the table's indexes")))
            goto done;
        int found = 0;
        char last[256] = "";
        size_t ncol = 0, nmatch = 0;
        for (;;) {
            r = mysql_fetch_row(res);
            if (!r || !r[0] || strcmp(r[0], last) != 0) {
                if (last[0] && ncol == run->nkey_cols && nmatch == ncol)
                    found = 1;
                if (!r || !r[0])
                    break;
                snprintf(last, sizeof(last), "%s", r[0]);
                ncol = nmatch = 0;
            }
            ncol++;
            for (size_t k = 0; k < run->nkey_cols; k++)
                if (r[1] && name_eq(r[1], run->key_cols[k]))
                    nmatch++;
        }
        if (!found) {
            zx_dt_fail(st->label, err, errlen,
                       "it has no primary key or unique index on exactly the key columns: "
                       "%s would add rows instead of replacing them",
                       run->mode == ZX_MODE_UPSERT ? "upsert" : "mirror");
            goto done;
        }
    }
    rc = 0;
done:
    if (res)
        mysql_free_result(res);
    free(have);
    zx_mysql_buf_free(&b);
    return rc;
}

/* INSERT INTO t (cols) VALUES  /  ON DUPLICATE KEY UPDATE c = VALUES(c) */
static void build_insert(my_state *st)
{
    zx_mysql_buf *h = &st->head, *t = &st->tail;
    h->len = t->len = 0;
    zx_mysql_buf_str(h, "INSERT INTO ");
    zx_mysql_buf_put(h, st->qname.p, st->qname.len);
    zx_mysql_buf_str(h, " (");
    for (size_t i = 0; i < st->ncols; i++) {
        if (i)
            zx_mysql_buf_ch(h, ',');
        zx_mysql_buf_ident(h, st->cols[i].name);
    }
    zx_mysql_buf_str(h, ") VALUES ");
    if (!zx_dt_keyed(st->run->mode))
        return;
    zx_mysql_buf_str(t, " ON DUPLICATE KEY UPDATE ");
    int first = 1;
    for (size_t i = 0; i < st->ncols; i++) {
        if (st->cols[i].key)
            continue;
        if (!first)
            zx_mysql_buf_ch(t, ',');
        first = 0;
        zx_mysql_buf_ident(t, st->cols[i].name);
        zx_mysql_buf_str(t, "=VALUES(");
        zx_mysql_buf_ident(t, st->cols[i].name);
        zx_mysql_buf_ch(t, ')');
    }
    if (first) {
        /* only key columns: nothing to change, but the duplicate must
         * not fail */
        zx_mysql_buf_ident(t, st->cols[st->keyix[0]].name);
        zx_mysql_buf_ch(t, '=');
        zx_mysql_buf_ident(t, st->cols[st->keyix[0]].name);
    }
}

static int my_begin(void *state, const zx_dest_run *run, zx_dest_stats *stats, char *err,
                    size_t errlen)
{
    my_state *st = state;
    st->run = run;
    st->stats = stats;
    st->pending = 0;
    st->stmt.len = 0;
    if (plan_columns(st, run, err, errlen) < 0)
        return -1;
    if (create_table(st, err, errlen) < 0 || check_table(st, err, errlen) < 0)
        return -1;
    build_insert(st);
    if (st->head.oom || st->tail.oom)
        return zx_dt_fail(st->label, err, errlen, "out of memory");
    if (query(st, "START TRANSACTION", 17, err, errlen, "starting the transaction") < 0)
        return -1;
    st->in_txn = 1;
    if (run->mode == ZX_MODE_REPLACE) {
        zx_mysql_buf b = {0};
        zx_mysql_buf_str(&b, "DELETE FROM ");
        zx_mysql_buf_put(&b, st->qname.p, st->qname.len);
        int rc = query_sb(st, &b, err, errlen, "emptying the table (replace)");
        zx_mysql_buf_free(&b);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* ---- write ---------------------------------------------------------------- */

/* Send the INSERT being filled, if any. */
static int flush_insert(my_state *st, char *err, size_t errlen)
{
    if (st->pending == 0)
        return 0;
    zx_mysql_buf_put(&st->stmt, st->tail.p ? st->tail.p : "", st->tail.len);
    int rc = query_sb(st, &st->stmt, err, errlen, "inserting rows");
    if (rc == 0) {
        st->stats->rows_written += st->pending;
        st->stats->bytes += st->stmt.len;
    }
    /* sent or failed (the run is then over), the rows are gone */
    st->pending = 0;
    st->stmt.len = 0;
    st->stmt.oom = 0;
    return rc;
}

static int values_room(my_state *st, size_t n)
{
    if (n <= st->vals_cap)
        return 0;
    zx_value *v = realloc(st->vals, n * sizeof(*v));
    if (!v)
        return -1;
    st->vals = v;
    st->vals_cap = n;
    return 0;
}

static int my_write(void *state, const zx_rowset *rs, char *err, size_t errlen)
{
    my_state *st = state;
    if (zx_dt_check_write(st->label, st->in_txn, rs, st->ncols, err, errlen) < 0)
        return -1;
    if (values_room(st, st->ncols) < 0)
        return zx_dt_fail(st->label, err, errlen, "out of memory");
    for (uint32_t r = 0; r < rs->nrows; r++) {
        zx_rowset_row(rs, r, st->vals);
        zx_mysql_buf *row = &st->row;
        row->len = 0;
        zx_mysql_buf_ch(row, '(');
        for (size_t i = 0; i < st->ncols; i++) {
            if (i)
                zx_mysql_buf_ch(row, ',');
            int pv = zx_mysql_put_value(st->db, &st->conv, row, &st->cols[i].target,
                                        &st->vals[i]);
            if (pv == ZX_MYSQL_MISFIT) {
                st->stats->nulled++;
                zx_dest_misfit(st->stats, st->cols[i].name, &st->vals[i]);
            }
            if (pv != ZX_MYSQL_VALUE && st->cols[i].key)
                return zx_dt_fail(st->label, err, errlen,
                                  "key column %s of a row is %s: a primary key cannot hold NULL",
                                  st->cols[i].name,
                                  pv == ZX_MYSQL_NULL ? "NULL"
                                  : "a value its column cannot hold (too long, or not of its "
                                    "type)");
        }
        zx_mysql_buf_ch(row, ')');
        if (row->oom)
            return zx_dt_fail(st->label, err, errlen, "out of memory");
        if (st->head.len + row->len + st->tail.len > st->max_row)
            return zx_dt_fail(st->label, err, errlen,
                              "a row takes %zu bytes as SQL, more than the server's "
                              "max_allowed_packet allows (%zu)", row->len, st->max_row);
        if (st->pending && st->stmt.len + 1 + row->len + st->tail.len > st->target &&
            flush_insert(st, err, errlen) < 0)
            return -1;
        if (st->pending == 0)
            zx_mysql_buf_put(&st->stmt, st->head.p, st->head.len);
        else
            zx_mysql_buf_ch(&st->stmt, ',');
        zx_mysql_buf_put(&st->stmt, row->p, row->len);
        if (st->stmt.oom)
            return zx_dt_fail(st->label, err, errlen, "out of memory");
        st->pending++;
    }
    return 0;
}

/* ---- delete_keys ---------------------------------------------------------- */

static int send_delete(my_state *st, zx_mysql_buf *b, size_t n, char *err, size_t errlen)
{
    if (n == 0)
        return 0;
    zx_mysql_buf_ch(b, ')');
    if (query_sb(st, b, err, errlen, "deleting rows") < 0)
        return -1;
    st->stats->rows_deleted += mysql_affected_rows(st->db);
    st->stats->bytes += b->len;
    return 0;
}

static int my_delete_keys(void *state, const zx_rowset *keys, char *err, size_t errlen)
{
    my_state *st = state;
    const zx_dest_run *run = st->run;
    if (zx_dt_check_delete(st->label, st->in_txn, keys, st->in_txn ? run->nkey_cols : 0, err,
                           errlen) < 0)
        return -1;
    if (flush_insert(st, err, errlen) < 0)
        return -1;
    if (values_room(st, run->nkey_cols) < 0)
        return zx_dt_fail(st->label, err, errlen, "out of memory");
    int rc = -1;
    zx_mysql_buf head = {0}, b = {0};
    zx_mysql_buf_str(&head, "DELETE FROM ");
    zx_mysql_buf_put(&head, st->qname.p, st->qname.len);
    zx_mysql_buf_str(&head, " WHERE ");
    if (run->nkey_cols > 1)
        zx_mysql_buf_ch(&head, '(');
    for (size_t k = 0; k < run->nkey_cols; k++) {
        if (k)
            zx_mysql_buf_ch(&head, ',');
        zx_mysql_buf_ident(&head, run->key_cols[k]);
    }
    zx_mysql_buf_str(&head, run->nkey_cols > 1 ? ") IN (" : " IN (");
    size_t n = 0;
    for (uint32_t r = 0; r < keys->nrows; r++) {
        zx_rowset_row(keys, r, st->vals);
        zx_mysql_buf *row = &st->row;
        row->len = 0;
        int skip = 0;
        if (run->nkey_cols > 1)
            zx_mysql_buf_ch(row, '(');
        for (size_t k = 0; k < run->nkey_cols; k++) {
            if (k)
                zx_mysql_buf_ch(row, ',');
            /* a NULL or misfit key cannot be in the table */
            if (zx_mysql_put_value(st->db, &st->conv, row, &st->cols[st->keyix[k]].target,
                                   &st->vals[k]) != ZX_MYSQL_VALUE)
                skip = 1;
        }
        if (run->nkey_cols > 1)
            zx_mysql_buf_ch(row, ')');
        if (row->oom || head.oom) {
            zx_dt_fail(st->label, err, errlen, "out of memory");
            goto done;
        }
        if (skip)
            continue;
        if (n && b.len + 2 + row->len > st->target) {
            if (send_delete(st, &b, n, err, errlen) < 0)
                goto done;
            n = 0;
        }
        if (n == 0) {
            b.len = 0;
            zx_mysql_buf_put(&b, head.p, head.len);
        } else {
            zx_mysql_buf_ch(&b, ',');
        }
        zx_mysql_buf_put(&b, row->p, row->len);
        n++;
    }
    if (send_delete(st, &b, n, err, errlen) < 0)
        goto done;
    rc = 0;
done:
    zx_mysql_buf_free(&head);
    zx_mysql_buf_free(&b);
    return rc;
}

/* ---- commit / abort ------------------------------------------------------- */

static int my_commit(void *state, char *err, size_t errlen)
{
    my_state *st = state;
    if (zx_dt_check_commit(st->label, st->in_txn, err, errlen) < 0)
        return -1;
    if (flush_insert(st, err, errlen) < 0)
        return -1;
    if (st->gone)
        return zx_dt_fail(st->label, err, errlen, "COMMIT: the connection to the server was "
                          "lost earlier");
    if (mysql_real_query(st->db, "COMMIT", 6) != 0) {
        fail_db(st, err, errlen, "COMMIT");
        if (st->gone && err && errlen) {
            size_t l = strlen(err);
            snprintf(err + l, errlen - l,
                     "; the connection was lost during COMMIT: the server may or may "
                     "not have committed the run");
        }
        return -1;
    }
    st->in_txn = 0;
    return 0;
}

static void my_abort(void *state)
{
    my_state *st = state;
    if (!st)
        return;
    st->pending = 0;
    st->stmt.len = 0;
    if (st->in_txn && st->db && !st->gone)
        (void)mysql_real_query(st->db, "ROLLBACK", 8);
    st->in_txn = 0;
}

const zx_dest zx_dest_mysql = {
    .name = "mysql",
    .caps = ZX_DEST_TXN | ZX_DEST_DELETES | ZX_DEST_UPSERT,
    .open = my_open,
    .begin = my_begin,
    .write = my_write,
    .delete_keys = my_delete_keys,
    .commit = my_commit,
    .abort = my_abort,
    .close = my_close,
};
