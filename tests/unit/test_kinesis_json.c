/*
 * test_kinesis_json.c — the Kinesis API's JSON responses
 * (workers/sources/kinesis/kinesis_json.h), in the shapes of the AWS
 * Kinesis API reference's examples: GetRecords (an open shard, a closed
 * one with ChildShards), GetShardIterator, ListShards (with a split and a
 * merge), DescribeStreamSummary, error bodies; malformed inputs; the order
 * of sequence numbers of 56 digits.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"
#include "workers/sources/kinesis/kinesis_json.h"

#define LEN(s) (sizeof(s) - 1)

static void test_get_records(void)
{
    static const char body[] =
        "{\n"
        "  \"MillisBehindLatest\": 2100,\n"
        "  \"NextShardIterator\": \"AAAAAAAAAAHsW8zCWf9164uy8Epue6WS3w6wmj4a4USt+CNvMd6uXQ+HL5vAJ"
        "MznqqC0DLKsIjuoiTi1BpT6nW0LN2M2D56zM5H8anHm30Gbri9ua+qaGgj+3XTyvbhpERfrezgLHbPB/rIcVpykJb"
        "aSj5tmcXYRmFnqZBEyHwtZYFmh6hvWVFkIwLuMZLMrpWhG5r5hzkE=\",\n"
        "  \"Records\": [\n"
        "    {\n"
        "      \"Data\": \"XzxkYXRhPl8w\",\n"
        "      \"PartitionKey\": \"partitionKey\",\n"
        "      \"ApproximateArrivalTimestamp\": 1.441215410867E9,\n"
        "      \"SequenceNumber\": \"21269319989652663814458848515492872193\"\n"
        "    },\n"
        "    {\n"
        "      \"Data\": \"eyJpZCI6IDJ9\",\n"
        "      \"PartitionKey\": \"cl\\u00e9\",\n"
        "      \"ApproximateArrivalTimestamp\": 1764500000,\n"
        "      \"SequenceNumber\": \"49590338271490256608559692538361571095921575989136588898\",\n"
        "      \"EncryptionType\": \"NONE\"\n"
        "    }\n"
        "  ]\n"
        "}\n";
    zx_kin_get_records r;
    char err[300] = "";
    CHECK(zx_kin_parse_get_records(body, LEN(body), &r, err, sizeof(err)) == 0);
    if (err[0])
        printf("  %s\n", err);
    CHECK(r.nrecords == 2 && r.millis_behind == 2100 && r.nchildren == 0);
    CHECK(r.next_iterator && strncmp(r.next_iterator, "AAAAAAAAAAHsW8", 14) == 0 &&
          strlen(r.next_iterator) == 204);
    if (r.nrecords == 2) {
        CHECK(r.records[0].len == 9 && memcmp(r.records[0].data, "_<data>_0", 9) == 0);
        CHECK(strcmp(r.records[0].partition_key, "partitionKey") == 0 &&
              r.records[0].pk_len == 12);
        CHECK(strcmp(r.records[0].seq, "21269319989652663814458848515492872193") == 0);
        CHECK(r.records[0].arrival_us == INT64_C(1441215410867000));
        CHECK(r.records[1].len == 9 && memcmp(r.records[1].data, "{\"id\": 2}", 9) == 0);
        CHECK(strcmp(r.records[1].partition_key, "cl\xc3\xa9") == 0 && r.records[1].pk_len == 4);
        CHECK(r.records[1].arrival_us == INT64_C(1764500000000000));
    }
    zx_kin_get_records_free(&r);
    CHECK(r.records == NULL && r.arena == NULL);

    /* a partition key holding U+0000 is kept whole; Data without padding */
    static const char nul[] = "{\"Records\": [{\"Data\": \"eyJpZCI6IDJ9\", \"PartitionKey\":"
                              " \"a\\u0000b\", \"SequenceNumber\": \"0\"}, {\"Data\": \"YQ\","
                              " \"PartitionKey\": \"k\", \"SequenceNumber\": \"1\"}],"
                              " \"NextShardIterator\": \"it\"}";
    CHECK(zx_kin_parse_get_records(nul, LEN(nul), &r, err, sizeof(err)) == 0);
    CHECK(r.nrecords == 2 && r.records[0].pk_len == 3 &&
          memcmp(r.records[0].partition_key, "a\0b", 4) == 0);
    CHECK(r.nrecords == 2 && r.records[1].len == 1 && r.records[1].data[0] == 'a' &&
          r.records[1].arrival_us == -1 && r.millis_behind == -1);
    zx_kin_get_records_free(&r);
}

static void test_closed_shard(void)
{
    /* the end of a split shard: no NextShardIterator, its two children */
    static const char body[] =
        "{\"Records\": [], \"MillisBehindLatest\": 0, \"ChildShards\": ["
        "{\"ShardId\": \"shardId-000000000001\", \"ParentShards\": [\"shardId-000000000000\"],"
        " \"HashKeyRange\": {\"StartingHashKey\": \"0\","
        " \"EndingHashKey\": \"170141183460469231731687303715884105727\"}},"
        "{\"ShardId\": \"shardId-000000000002\", \"ParentShards\": [\"shardId-000000000000\"],"
        " \"HashKeyRange\": {\"StartingHashKey\": \"170141183460469231731687303715884105728\","
        " \"EndingHashKey\": \"340282366920938463463374607431768211455\"}}]}";
    zx_kin_get_records r;
    char err[300] = "";
    CHECK(zx_kin_parse_get_records(body, LEN(body), &r, err, sizeof(err)) == 0);
    CHECK(r.nrecords == 0 && r.next_iterator == NULL && r.millis_behind == 0);
    CHECK(r.nchildren == 2);
    if (r.nchildren == 2) {
        CHECK(strcmp(r.children[0].shard_id, "shardId-000000000001") == 0);
        CHECK(r.children[0].nparents == 1 &&
              strcmp(r.children[0].parents[0], "shardId-000000000000") == 0);
        CHECK(strcmp(r.children[1].end_hash, "340282366920938463463374607431768211455") == 0);
    }
    zx_kin_get_records_free(&r);

    /* a merge: one child of two parents; NextShardIterator null */
    static const char merge[] =
        "{\"Records\": [], \"NextShardIterator\": null, \"ChildShards\": ["
        "{\"ShardId\": \"shardId-000000000003\", \"ParentShards\": [\"shardId-000000000001\","
        " \"shardId-000000000002\"]}]}";
    CHECK(zx_kin_parse_get_records(merge, LEN(merge), &r, err, sizeof(err)) == 0);
    CHECK(r.next_iterator == NULL && r.millis_behind == -1 && r.nchildren == 1 &&
          r.children[0].nparents == 2 && r.children[0].start_hash == NULL &&
          strcmp(r.children[0].parents[1], "shardId-000000000002") == 0);
    zx_kin_get_records_free(&r);
}

/* body must fail with a message holding want. */
static void expect_gr_bad(const char *body, const char *want)
{
    zx_kin_get_records r;
    char err[300] = "";
    int rc = zx_kin_parse_get_records(body, strlen(body), &r, err, sizeof(err));
    CHECK(rc == -1 && strstr(err, want) != NULL);
    if (rc != -1 || !strstr(err, want))
        printf("  want \"%s\", got %d \"%s\"\n", want, rc, err);
    CHECK(r.records == NULL && r.nrecords == 0 && r.arena == NULL);
    zx_kin_get_records_free(&r);
}

static void test_get_records_bad(void)
{
    expect_gr_bad("", "not JSON");
    expect_gr_bad("{\"Records\": [", "not JSON");
    expect_gr_bad("[]", "not a JSON object");
    expect_gr_bad("{}", "no Records array");
    expect_gr_bad("{\"Records\": {}}", "not an array");
    expect_gr_bad("{\"Records\": [1]}", "Records[0] is not an object");
    expect_gr_bad("{\"Records\": [{\"PartitionKey\": \"a\", \"SequenceNumber\": \"1\"}]}",
                  "Records[0].Data is missing");
    expect_gr_bad("{\"Records\": [{\"Data\": \"!!!!\", \"PartitionKey\": \"a\","
                  " \"SequenceNumber\": \"1\"}]}", "Records[0].Data is not base64");
    expect_gr_bad("{\"Records\": [{\"Data\": \"\", \"SequenceNumber\": \"1\"}]}",
                  "no Records[0].PartitionKey");
    expect_gr_bad("{\"Records\": [{\"Data\": \"\", \"PartitionKey\": \"a\","
                  " \"SequenceNumber\": \"12a\"}]}",
                  "Records[0].SequenceNumber is not a sequence number");
    expect_gr_bad("{\"Records\": [{\"Data\": \"\", \"PartitionKey\": \"a\","
                  " \"SequenceNumber\": 12}]}", "Records[0].SequenceNumber is not a string");
    expect_gr_bad("{\"Records\": [{\"Data\": \"\", \"PartitionKey\": \"a\","
                  " \"SequenceNumber\": \"012\"}]}", "not a sequence number");
    expect_gr_bad("{\"Records\": [{\"Data\": \"\", \"PartitionKey\": \"a\","
                  " \"SequenceNumber\": \"1\", \"ApproximateArrivalTimestamp\": -5}]}",
                  "ApproximateArrivalTimestamp");
    expect_gr_bad("{\"Records\": [{\"Data\": \"\", \"PartitionKey\": \"a\","
                  " \"SequenceNumber\": \"1\", \"ApproximateArrivalTimestamp\": \"x\"}]}",
                  "ApproximateArrivalTimestamp");
    expect_gr_bad("{\"Records\": [], \"MillisBehindLatest\": -1}", "MillisBehindLatest");
    expect_gr_bad("{\"Records\": [], \"NextShardIterator\": \"\"}", "not a shard iterator");
    expect_gr_bad("{\"Records\": [], \"NextShardIterator\": \"a b\"}", "not a shard iterator");
    expect_gr_bad("{\"Records\": [], \"ChildShards\": [{\"ShardId\": \"x/y\"}]}",
                  "ChildShards[0].ShardId is not a shard id");
    expect_gr_bad("{\"Records\": [], \"ChildShards\": [{\"ShardId\": \"s\", \"ParentShards\":"
                  " [\"a\", \"b\", \"c\"]}]}", "at most 2");
    expect_gr_bad("{\"Records\": [], \"ChildShards\": [{\"ShardId\": \"s\", \"HashKeyRange\":"
                  " {\"StartingHashKey\": \"0\", \"EndingHashKey\":"
                  " \"3402823669209384634633746074317682114550\"}}]}", "not a hash key");
    /* a sequence number of 130 digits */
    char big[300];
    memset(big, 0, sizeof(big));
    strcpy(big, "{\"Records\": [{\"Data\": \"\", \"PartitionKey\": \"a\", \"SequenceNumber\": \"");
    size_t at = strlen(big);
    memset(big + at, '7', 130);
    strcpy(big + at + 130, "\"}]}");
    expect_gr_bad(big, "not a sequence number");
    big[at + 1] = '"'; /* a shorter one is fine... but the rest is garbage now */
    expect_gr_bad(big, "not JSON");
}

static void test_shard_iterator(void)
{
    static const char body[] =
        "{\n  \"ShardIterator\": \"AAAAAAAAAAETYyAYzd665+8e0X7JTsASDM/Hr2rSwc0X2qz93iuA3udrjTH+ik"
        "QvpQk/1ZcMMLzRdAesqwBGPnsthzU0/CBlM/U8/8oEqGwX3pKw0XyeDNRAAZyXBo3MqkQtCpXhr942BRTjvWKhFz"
        "7OmCb2Ncfr8Tl2cBktooi6kJhr+djN5WYkB38Rr3akRgCl9qaU4dY=\"\n}";
    char *it = NULL, err[300] = "";
    CHECK(zx_kin_parse_shard_iterator(body, LEN(body), &it, err, sizeof(err)) == 0);
    CHECK(it && strncmp(it, "AAAAAAAAAAETYy", 14) == 0 && it[strlen(it) - 1] == '=');
    free(it);
    CHECK(zx_kin_parse_shard_iterator("{}", 2, &it, err, sizeof(err)) == -1 && it == NULL &&
          strstr(err, "no ShardIterator"));
    CHECK(zx_kin_parse_shard_iterator("{\"ShardIterator\": null}", 23, &it, err,
                                      sizeof(err)) == -1 && it == NULL);
    CHECK(zx_kin_parse_shard_iterator("nope", 4, &it, err, sizeof(err)) == -1 &&
          strstr(err, "GetShardIterator response is not JSON"));
}

static void test_list_shards(void)
{
    /* shard 0 split into 1 and 2, then 1 and 2 merged into 3 */
    static const char body[] =
        "{\"Shards\": ["
        "{\"ShardId\": \"shardId-000000000000\", \"HashKeyRange\": {\"StartingHashKey\": \"0\","
        " \"EndingHashKey\": \"340282366920938463463374607431768211455\"},"
        " \"SequenceNumberRange\": {\"StartingSequenceNumber\":"
        " \"49579844037727333356165064238440708846556371693205002258\","
        " \"EndingSequenceNumber\": \"49579844037738483728764329549877520211305208813616660482\"}},"
        "{\"ShardId\": \"shardId-000000000001\", \"ParentShardId\": \"shardId-000000000000\","
        " \"HashKeyRange\": {\"StartingHashKey\": \"0\","
        " \"EndingHashKey\": \"170141183460469231731687303715884105727\"},"
        " \"SequenceNumberRange\": {\"StartingSequenceNumber\":"
        " \"49579844037749584101363594861314332175990014290290737170\","
        " \"EndingSequenceNumber\": \"49579844037760734473962860172751143540738851410702393362\"}},"
        "{\"ShardId\": \"shardId-000000000003\", \"ParentShardId\": \"shardId-000000000001\","
        " \"AdjacentParentShardId\": \"shardId-000000000002\","
        " \"SequenceNumberRange\": {\"StartingSequenceNumber\":"
        " \"49579844037771884846562125484187954905487688531114049586\"}}],"
        " \"NextToken\": \"AAAAAAAAAAGx4lpYyMpIvSfXf5bJpm8jIWB2KQPhw6NrBnFOygsi3WE9YAaqBCvbqXt/y"
        "kzl5TI7RzgewXgmGDPvQq1HiYx+vUgCKtMnc0IRcbb1JKcCMyr6P2k2Hvx/5RUfMuXUqpxn9CsttLCL5dlxKO/NJ"
        "6/lf54Jb1EkQX8X49ktWQtaYAPmntn/FdqKRwVyl6R46+aOW/jG2apyw9mp2ko2y+0PoqStRnQXfMMqwzDXBz9f+"
        "8Ah9ZSBo2R9CjuuRfsBfe3u+UUpUR2nVAn4sBrZLw7AyzKMf17vJlaTFeuEbZGFT5xQ==\"}";
    zx_kin_shard_list l;
    char err[300] = "";
    CHECK(zx_kin_parse_list_shards(body, LEN(body), &l, err, sizeof(err)) == 0);
    if (err[0])
        printf("  %s\n", err);
    CHECK(l.nshards == 3 && l.next_token && strncmp(l.next_token, "AAAAAAAAAAGx", 12) == 0);
    if (l.nshards == 3) {
        CHECK(strcmp(l.shards[0].shard_id, "shardId-000000000000") == 0 &&
              l.shards[0].parent == NULL && l.shards[0].adjacent_parent == NULL &&
              strcmp(l.shards[0].end_seq,
                     "49579844037738483728764329549877520211305208813616660482") == 0);
        CHECK(strcmp(l.shards[1].parent, "shardId-000000000000") == 0 &&
              strcmp(l.shards[1].end_hash, "170141183460469231731687303715884105727") == 0);
        CHECK(strcmp(l.shards[2].adjacent_parent, "shardId-000000000002") == 0 &&
              l.shards[2].end_seq == NULL && l.shards[2].start_hash == NULL);
        /* a child starts after its parent's end */
        CHECK(zx_kin_seq_cmp(l.shards[1].start_seq, l.shards[0].end_seq) > 0);
    }
    zx_kin_shard_list_free(&l);

    CHECK(zx_kin_parse_list_shards("{\"Shards\": []}", 14, &l, err, sizeof(err)) == 0 &&
          l.nshards == 0 && l.next_token == NULL);
    zx_kin_shard_list_free(&l);
    static const char *const bad[][2] = {
        {"{}", "no Shards array"},
        {"{\"Shards\": [{\"ShardId\": \"s\"}]}", "Shards[0].SequenceNumberRange is missing"},
        {"{\"Shards\": [{\"ShardId\": \"s\", \"SequenceNumberRange\": {}}]}",
         "no Shards[0].SequenceNumberRange.StartingSequenceNumber"},
        {"{\"Shards\": [{\"ShardId\": \"s\", \"ParentShardId\": 3, \"SequenceNumberRange\":"
         " {\"StartingSequenceNumber\": \"1\"}}]}", "Shards[0].ParentShardId is not a string"},
        {"{\"Shards\": [{\"SequenceNumberRange\": {\"StartingSequenceNumber\": \"1\"}}]}",
         "no Shards[0].ShardId"},
        {"{\"Shards\": [], \"NextToken\": 5}", "NextToken"},
        {"{\"Shards\": [], \"NextToken\": \"\"}", "NextToken"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        int rc = zx_kin_parse_list_shards(bad[i][0], strlen(bad[i][0]), &l, err, sizeof(err));
        CHECK(rc == -1 && strstr(err, bad[i][1]));
        if (rc != -1 || !strstr(err, bad[i][1]))
            printf("  want \"%s\", got %d \"%s\"\n", bad[i][1], rc, err);
        CHECK(l.shards == NULL && l.arena == NULL);
        zx_kin_shard_list_free(&l);
    }
}

static void test_stream_summary(void)
{
    static const char body[] =
        "{\n  \"StreamDescriptionSummary\": {\n"
        "    \"StreamName\": \"samplestream\",\n"
        "    \"StreamARN\": \"arn:aws:kinesis:us-east-1:123456789012:stream/samplestream\",\n"
        "    \"StreamStatus\": \"ACTIVE\",\n"
        "    \"StreamModeDetails\": {\"StreamMode\": \"PROVISIONED\"},\n"
        "    \"RetentionPeriodHours\": 24,\n"
        "    \"StreamCreationTimestamp\": 1.550088187E9,\n"
        "    \"EnhancedMonitoring\": [{\"ShardLevelMetrics\": []}],\n"
        "    \"EncryptionType\": \"NONE\",\n"
        "    \"OpenShardCount\": 3,\n"
        "    \"ConsumerCount\": 0\n  }\n}";
    zx_kin_stream_summary s;
    char err[300] = "";
    CHECK(zx_kin_parse_stream_summary(body, LEN(body), &s, err, sizeof(err)) == 0);
    CHECK(strcmp(s.status, "ACTIVE") == 0 && s.open_shards == 3 && s.retention_hours == 24);
    CHECK(s.stream_arn &&
          strcmp(s.stream_arn, "arn:aws:kinesis:us-east-1:123456789012:stream/samplestream") == 0);
    CHECK(s.stream_name && strcmp(s.stream_name, "samplestream") == 0);
    zx_kin_stream_summary_free(&s);

    CHECK(zx_kin_parse_stream_summary("{\"StreamDescriptionSummary\": {\"StreamStatus\":"
                                      " \"CREATING\"}}", 58, &s, err, sizeof(err)) == 0 &&
          strcmp(s.status, "CREATING") == 0 && s.open_shards == -1 && s.stream_arn == NULL);
    zx_kin_stream_summary_free(&s);
    static const char *const bad[][2] = {
        {"{}", "no StreamDescriptionSummary"},
        {"{\"StreamDescriptionSummary\": {}}", "StreamStatus is missing"},
        {"{\"StreamDescriptionSummary\": {\"StreamStatus\": \"active\"}}", "not a status"},
        {"{\"StreamDescriptionSummary\": {\"StreamStatus\": \"ACTIVE\", \"OpenShardCount\":"
         " 1.5}}", "OpenShardCount is not an integer"},
        {"{\"StreamDescriptionSummary\": {\"StreamStatus\": \"ACTIVE\", \"StreamARN\": 1}}",
         "StreamARN is not a string"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        int rc = zx_kin_parse_stream_summary(bad[i][0], strlen(bad[i][0]), &s, err,
                                             sizeof(err));
        CHECK(rc == -1 && strstr(err, bad[i][1]));
        if (rc != -1 || !strstr(err, bad[i][1]))
            printf("  want \"%s\", got %d \"%s\"\n", bad[i][1], rc, err);
        CHECK(s.stream_arn == NULL);
        zx_kin_stream_summary_free(&s);
    }
}

static void test_errors(void)
{
    zx_kin_error e;
    static const char a[] = "{\"__type\": \"ResourceNotFoundException\", \"message\":"
                            " \"Stream orders under account 123456789012 not found.\"}";
    CHECK(zx_kin_parse_error(a, LEN(a), &e) == 0);
    CHECK(strcmp(e.type, "ResourceNotFoundException") == 0 &&
          strcmp(e.message, "Stream orders under account 123456789012 not found.") == 0);
    static const char b[] = "{\"__type\": \"com.amazonaws.kinesis.v20131202#"
                            "ExpiredIteratorException\", \"Message\": \"Iterator expired.\\n"
                            "The iterator was created at time ...\"}";
    CHECK(zx_kin_parse_error(b, LEN(b), &e) == 0);
    CHECK(strcmp(e.type, "ExpiredIteratorException") == 0 &&
          strncmp(e.message, "Iterator expired. The", 21) == 0);
    static const char c[] = "{\"__type\": \"ProvisionedThroughputExceededException:"
                            "http://internal.amazon.com/coral/com.amazon.coral.service/\"}";
    CHECK(zx_kin_parse_error(c, LEN(c), &e) == 0 &&
          strcmp(e.type, "ProvisionedThroughputExceededException") == 0 && e.message[0] == 0);
    static const char d[] = "{\"message\": \"The security token included in the request is"
                            " invalid.\"}";
    CHECK(zx_kin_parse_error(d, LEN(d), &e) == 0 && e.type[0] == 0 &&
          strstr(e.message, "security token"));
    CHECK(zx_kin_parse_error("{}", 2, &e) == -1 && e.type[0] == 0);
    CHECK(zx_kin_parse_error("<html>", 6, &e) == -1);
    CHECK(zx_kin_parse_error("[\"__type\"]", 10, &e) == -1);
    CHECK(zx_kin_parse_error(NULL, 0, &e) == -1);
    /* the header form, and junk */
    char t[16];
    zx_kin_error_short_type("LimitExceededException", 22, t, sizeof(t));
    CHECK(strcmp(t, "LimitExceededEx") == 0); /* truncated to the room */
    char u[64];
    zx_kin_error_short_type("a#b#Acc<ess>Denied Exception:x#y", 32, u, sizeof(u));
    CHECK(strcmp(u, "y") == 0);
    zx_kin_error_short_type("x#Acc<ess>Denied Exception:zz", 29, u, sizeof(u));
    CHECK(strcmp(u, "AccessDeniedException") == 0);
    char big[600];
    memset(big, 'a', sizeof(big));
    memcpy(big, "{\"message\": \"", 13);
    memcpy(big + sizeof(big) - 2, "\"}", 2);
    CHECK(zx_kin_parse_error(big, sizeof(big), &e) == 0 && strlen(e.message) == 511);
}

static void test_seq(void)
{
    static const char s1[] = "49590338271490256608559692538361571095921575989136588898";
    static const char s2[] = "49590338271490256608559692538361571095921575989136588899";
    static const char s3[] = "49590338271490256608559692538361571095921575989136598898";
    static const char s4[] = "4959033827149025660855969253836157109592157598913658889";
    CHECK(strlen(s1) == 56);
    CHECK(zx_kin_seq_valid(s1, strlen(s1)));
    CHECK(zx_kin_seq_cmp(s1, s2) < 0 && zx_kin_seq_cmp(s2, s1) > 0);
    CHECK(zx_kin_seq_cmp(s1, s1) == 0);
    CHECK(zx_kin_seq_cmp(s3, s2) > 0);
    CHECK(zx_kin_seq_cmp(s4, s1) < 0 && zx_kin_seq_cmp(s1, s4) > 0); /* shorter is smaller */
    CHECK(zx_kin_seq_cmp("9", "10") < 0);
    CHECK(zx_kin_seq_cmp("0", "0") == 0 && zx_kin_seq_cmp("0", "1") < 0);
    CHECK(zx_kin_seq_cmp("007", "7") == 0);
    CHECK(zx_kin_seq_valid("0", 1) && !zx_kin_seq_valid("00", 2) && !zx_kin_seq_valid("", 0));
    CHECK(!zx_kin_seq_valid("-1", 2) && !zx_kin_seq_valid("1 ", 2) && !zx_kin_seq_valid("1e5", 3));
    char m[131];
    memset(m, '9', sizeof(m));
    CHECK(zx_kin_seq_valid(m, 129) && !zx_kin_seq_valid(m, 130));
    CHECK(zx_kin_shard_id_valid("shardId-000000000000", 20));
    CHECK(!zx_kin_shard_id_valid("", 0) && !zx_kin_shard_id_valid("a b", 3));
}

int main(void)
{
    test_get_records();
    test_closed_shard();
    test_get_records_bad();
    test_shard_iterator();
    test_list_shards();
    test_stream_summary();
    test_errors();
    test_seq();
    if (failures)
        printf("%d check(s) failed\n", failures);
    else
        printf("kinesis_json: all checks passed\n");
    return failures != 0;
}
