"""Every config key Kafka 4.0 defines for a broker (KafkaConfig) and for a topic (LogConfig), and what pykraft does
with each one: the one table the rest of pykraft reads (config_schema.py parses it). Rows are sorted by name, one
key per line, so that adding or changing a key is a one-line change.

Columns, separated by `|`:
- name, and Kafka's type (ConfigDef.Type);
- Kafka's default as ConfigDef prints it: `null` for none, `<required>` for a key that must be set, nothing for
  the empty string;
- Kafka's valid values as its validator prints them (`[1,...]`, `[0,...,1]`, `[a, b]`, `non-empty string`, ...);
- brokers only: Kafka's dynamic update mode (DynamicBrokerConfig): `read-only` (server.properties only),
  `per-broker` (dynamic for one broker id only), `cluster-wide` (dynamic for one broker or as the cluster default);
- what pykraft does with it:
  - `honoured`: read at start (server.properties); a dynamic change is refused (pykraft would not apply it);
  - `live`: read at start and applied without a restart when changed dynamically (IncrementalAlterConfigs or
    AlterConfigs on the broker or on the cluster default), with Kafka's precedence (broker/topic_settings.py);
  - `ignored`: a Kafka key pykraft does not implement: named in one warning at start, refused as a dynamic change;
  - `refused`: a security setting pykraft does not enforce: the start is refused rather than run without it;
  - topics: `honoured`, or `default-only` (pykraft behaves as Kafka's default; any other value is refused with
    INVALID_CONFIG naming the key).
The log cleaner's keys (cleanup.policy, the compaction lags and ratio, delete.retention.ms, log.cleaner.*) are
the compaction work's; they are marked as it honours them.

Kafka's documentation of each key is not copied here: DescribeConfigs' documentation comes from config_docs.py.
"""

from __future__ import annotations

BROKER_TABLE = """
add.partitions.to.txn.retry.backoff.max.ms           | INT      | 100 | [0,...] | read-only | ignored
add.partitions.to.txn.retry.backoff.ms               | INT      | 20 | [1,...] | read-only | ignored
advertised.listeners                                 | STRING   | null |  | read-only | honoured
allow.everyone.if.no.acl.found                       | BOOLEAN  | false |  | read-only | honoured
alter.config.policy.class.name                       | CLASS    | null |  | read-only | ignored
alter.log.dirs.replication.quota.window.num          | INT      | 11 | [1,...] | read-only | ignored
alter.log.dirs.replication.quota.window.size.seconds | INT      | 1 | [1,...] | read-only | ignored
authorizer.class.name                                | STRING   |  | non-null string | read-only | honoured
auto.create.topics.enable                            | BOOLEAN  | true |  | read-only | honoured
auto.leader.rebalance.enable                         | BOOLEAN  | true |  | read-only | honoured
background.threads                                   | INT      | 10 | [1,...] | cluster-wide | ignored
broker.heartbeat.interval.ms                         | INT      | 2000 |  | read-only | honoured
broker.id                                            | INT      | -1 |  | read-only | ignored
broker.rack                                          | STRING   | null |  | read-only | honoured
broker.session.timeout.ms                            | INT      | 9000 |  | read-only | honoured
client.quota.callback.class                          | CLASS    | null |  | read-only | ignored
compression.gzip.level                               | INT      | -1 | [1,...,9] or -1 | cluster-wide | ignored
compression.lz4.level                                | INT      | 9 | [1,...,17] | cluster-wide | ignored
compression.type                                     | STRING   | producer | [uncompressed, zstd, lz4, snappy, gzip, producer] | cluster-wide | ignored
compression.zstd.level                               | INT      | 3 | [-131072,...,22] | cluster-wide | ignored
connection.failed.authentication.delay.ms            | INT      | 100 | [0,...] | read-only | honoured
connections.max.idle.ms                              | LONG     | 600000 |  | read-only | ignored
connections.max.reauth.ms                            | LONG     | 0 |  | read-only | honoured
controlled.shutdown.enable                           | BOOLEAN  | true |  | read-only | ignored
controller.listener.names                            | STRING   | null |  | read-only | honoured
controller.quorum.append.linger.ms                   | INT      | 25 |  | read-only | honoured
controller.quorum.auto.join.enable                   | BOOLEAN  | false |  | read-only | honoured
controller.quorum.bootstrap.servers                  | LIST     |  | non-empty list | read-only | honoured
controller.quorum.election.backoff.max.ms            | INT      | 1000 |  | read-only | honoured
controller.quorum.election.timeout.ms                | INT      | 1000 |  | read-only | honoured
controller.quorum.fetch.timeout.ms                   | INT      | 2000 |  | read-only | honoured
controller.quorum.request.timeout.ms                 | INT      | 2000 |  | read-only | honoured
controller.quorum.retry.backoff.ms                   | INT      | 20 |  | read-only | honoured
controller.quorum.voters                             | LIST     |  | non-empty list | read-only | honoured
controller.quota.window.num                          | INT      | 11 | [1,...] | read-only | ignored
controller.quota.window.size.seconds                 | INT      | 1 | [1,...] | read-only | ignored
controller.socket.timeout.ms                         | INT      | 30000 |  | read-only | ignored
create.topic.policy.class.name                       | CLASS    | null |  | read-only | ignored
default.replication.factor                           | INT      | 1 |  | read-only | honoured
delegation.token.expiry.check.interval.ms            | LONG     | 3600000 | [1,...] | read-only | refused
delegation.token.expiry.time.ms                      | LONG     | 86400000 | [1,...] | read-only | refused
delegation.token.max.lifetime.ms                     | LONG     | 604800000 | [1,...] | read-only | refused
delegation.token.secret.key                          | PASSWORD | null |  | read-only | refused
delete.records.purgatory.purge.interval.requests     | INT      | 1 |  | read-only | ignored
delete.topic.enable                                  | BOOLEAN  | true |  | read-only | ignored
early.start.listeners                                | STRING   | null |  | read-only | honoured
fetch.max.bytes                                      | INT      | 57671680 | [1024,...] | read-only | ignored
fetch.purgatory.purge.interval.requests              | INT      | 1000 |  | read-only | ignored
follower.replication.throttled.rate                  | LONG     | 9223372036854775807 | [0,...] | cluster-wide | ignored
group.consumer.assignors                             | LIST     | uniform,range |  | read-only | honoured
group.consumer.heartbeat.interval.ms                 | INT      | 5000 | [1,...] | read-only | honoured
group.consumer.max.heartbeat.interval.ms             | INT      | 15000 | [1,...] | read-only | honoured
group.consumer.max.session.timeout.ms                | INT      | 60000 | [1,...] | read-only | honoured
group.consumer.max.size                              | INT      | 2147483647 | [1,...] | read-only | honoured
group.consumer.migration.policy                      | STRING   | bidirectional | (case insensitive) [DISABLED, DOWNGRADE, UPGRADE, BIDIRECTIONAL] | read-only | honoured
group.consumer.min.heartbeat.interval.ms             | INT      | 5000 | [1,...] | read-only | honoured
group.consumer.min.session.timeout.ms                | INT      | 45000 | [1,...] | read-only | honoured
group.consumer.session.timeout.ms                    | INT      | 45000 | [1,...] | read-only | honoured
group.coordinator.append.linger.ms                   | INT      | 5 | [0,...] | read-only | ignored
group.coordinator.rebalance.protocols                | LIST     | classic,consumer | [consumer, classic, share] | read-only | honoured
group.coordinator.threads                            | INT      | 4 | [1,...] | read-only | ignored
group.initial.rebalance.delay.ms                     | INT      | 3000 |  | read-only | honoured
group.max.session.timeout.ms                         | INT      | 1800000 |  | read-only | honoured
group.max.size                                       | INT      | 2147483647 | [1,...] | read-only | ignored
group.min.session.timeout.ms                         | INT      | 6000 |  | read-only | honoured
group.share.delivery.count.limit                     | INT      | 5 | [2,...,10] | read-only | ignored
group.share.heartbeat.interval.ms                    | INT      | 5000 | [1,...] | read-only | ignored
group.share.max.groups                               | SHORT    | 10 | [1,...,100] | read-only | ignored
group.share.max.heartbeat.interval.ms                | INT      | 15000 | [1,...] | read-only | ignored
group.share.max.record.lock.duration.ms              | INT      | 60000 | [30000,...,3600000] | read-only | ignored
group.share.max.session.timeout.ms                   | INT      | 60000 | [1,...] | read-only | ignored
group.share.max.size                                 | INT      | 200 | [1,...,1000] | read-only | ignored
group.share.min.heartbeat.interval.ms                | INT      | 5000 | [1,...] | read-only | ignored
group.share.min.record.lock.duration.ms              | INT      | 15000 | [1000,...,30000] | read-only | ignored
group.share.min.session.timeout.ms                   | INT      | 45000 | [1,...] | read-only | ignored
group.share.partition.max.record.locks               | INT      | 200 | [100,...,10000] | read-only | ignored
group.share.record.lock.duration.ms                  | INT      | 30000 | [1000,...,3600000] | read-only | ignored
group.share.session.timeout.ms                       | INT      | 45000 | [1,...] | read-only | ignored
initial.broker.registration.timeout.ms               | INT      | 60000 |  | read-only | honoured
inter.broker.listener.name                           | STRING   | null |  | read-only | honoured
kafka.metrics.polling.interval.secs                  | INT      | 10 | [1,...] | read-only | ignored
kafka.metrics.reporters                              | LIST     |  |  | read-only | ignored
leader.imbalance.check.interval.seconds              | LONG     | 300 | [1,...] | read-only | honoured
leader.replication.throttled.rate                    | LONG     | 9223372036854775807 | [0,...] | cluster-wide | ignored
listener.security.protocol.map                       | STRING   | SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT |  | per-broker | honoured
listeners                                            | STRING   | PLAINTEXT://:9092 |  | per-broker | honoured
log.cleaner.backoff.ms                               | LONG     | 15000 | [0,...] | cluster-wide | honoured
log.cleaner.dedupe.buffer.size                       | LONG     | 134217728 |  | cluster-wide | honoured
log.cleaner.delete.retention.ms                      | LONG     | 86400000 | [0,...] | cluster-wide | live
log.cleaner.enable                                   | BOOLEAN  | true |  | read-only | honoured
log.cleaner.io.buffer.load.factor                    | DOUBLE   | 0.9 |  | cluster-wide | honoured
log.cleaner.io.buffer.size                           | INT      | 524288 | [0,...] | cluster-wide | honoured
log.cleaner.io.max.bytes.per.second                  | DOUBLE   | 1.7976931348623157E308 |  | cluster-wide | honoured
log.cleaner.max.compaction.lag.ms                    | LONG     | 9223372036854775807 | [1,...] | cluster-wide | live
log.cleaner.min.cleanable.ratio                      | DOUBLE   | 0.5 | [0,...,1] | cluster-wide | live
log.cleaner.min.compaction.lag.ms                    | LONG     | 0 | [0,...] | cluster-wide | live
log.cleaner.threads                                  | INT      | 1 | [0,...] | cluster-wide | honoured
log.cleanup.policy                                   | LIST     | delete | [compact, delete] | cluster-wide | live
log.dir                                              | STRING   | /tmp/kafka-logs |  | read-only | honoured
log.dir.failure.timeout.ms                           | LONG     | 30000 | [1,...] | read-only | ignored
log.dirs                                             | STRING   | null |  | read-only | honoured
log.flush.interval.messages                          | LONG     | 9223372036854775807 | [1,...] | cluster-wide | live
log.flush.interval.ms                                | LONG     | null |  | cluster-wide | live
log.flush.offset.checkpoint.interval.ms              | INT      | 60000 | [0,...] | read-only | ignored
log.flush.scheduler.interval.ms                      | LONG     | 9223372036854775807 |  | read-only | ignored
log.flush.start.offset.checkpoint.interval.ms        | INT      | 60000 | [0,...] | read-only | ignored
log.index.interval.bytes                             | INT      | 4096 | [0,...] | cluster-wide | ignored
log.index.size.max.bytes                             | INT      | 10485760 | [4,...] | cluster-wide | ignored
log.local.retention.bytes                            | LONG     | -2 | [-2,...] | cluster-wide | ignored
log.local.retention.ms                               | LONG     | -2 | [-2,...] | cluster-wide | ignored
log.message.timestamp.after.max.ms                   | LONG     | 3600000 | [0,...] | cluster-wide | ignored
log.message.timestamp.before.max.ms                  | LONG     | 9223372036854775807 | [0,...] | cluster-wide | ignored
log.message.timestamp.type                           | STRING   | CreateTime | [CreateTime, LogAppendTime] | cluster-wide | live
log.preallocate                                      | BOOLEAN  | false |  | cluster-wide | ignored
log.retention.bytes                                  | LONG     | -1 |  | cluster-wide | live
log.retention.check.interval.ms                      | LONG     | 300000 | [1,...] | read-only | ignored
log.retention.hours                                  | INT      | 168 |  | read-only | honoured
log.retention.minutes                                | INT      | null |  | read-only | honoured
log.retention.ms                                     | LONG     | null |  | cluster-wide | live
log.roll.hours                                       | INT      | 168 | [1,...] | read-only | honoured
log.roll.jitter.hours                                | INT      | 0 | [0,...] | read-only | ignored
log.roll.jitter.ms                                   | LONG     | null |  | cluster-wide | ignored
log.roll.ms                                          | LONG     | null |  | cluster-wide | live
log.segment.bytes                                    | INT      | 1073741824 | [1048576,...] | cluster-wide | live
log.segment.delete.delay.ms                          | LONG     | 60000 | [0,...] | cluster-wide | ignored
max.connection.creation.rate                         | INT      | 2147483647 | [0,...] | cluster-wide | ignored
max.connections                                      | INT      | 2147483647 | [0,...] | cluster-wide | ignored
max.connections.per.ip                               | INT      | 2147483647 | [0,...] | cluster-wide | ignored
max.connections.per.ip.overrides                     | STRING   |  |  | cluster-wide | ignored
max.incremental.fetch.session.cache.slots            | INT      | 1000 | [0,...] | read-only | ignored
max.request.partition.size.limit                     | INT      | 2000 | [1,...] | read-only | honoured
message.max.bytes                                    | INT      | 1048588 | [0,...] | cluster-wide | live
metadata.log.dir                                     | STRING   | null |  | read-only | honoured
metadata.log.max.record.bytes.between.snapshots      | LONG     | 20971520 | [1,...] | read-only | honoured
metadata.log.max.snapshot.interval.ms                | LONG     | 3600000 | [0,...] | read-only | honoured
metadata.log.segment.bytes                           | INT      | 1073741824 | [12,...] | read-only | honoured
metadata.log.segment.ms                              | LONG     | 604800000 |  | read-only | honoured
metadata.max.idle.interval.ms                        | INT      | 500 | [0,...] | read-only | honoured
metadata.max.retention.bytes                         | LONG     | 104857600 |  | read-only | honoured
metadata.max.retention.ms                            | LONG     | 604800000 |  | read-only | honoured
metric.reporters                                     | LIST     | org.apache.kafka.common.metrics.JmxReporter |  | cluster-wide | ignored
metrics.num.samples                                  | INT      | 2 | [1,...] | read-only | ignored
metrics.recording.level                              | STRING   | INFO |  | read-only | ignored
metrics.sample.window.ms                             | LONG     | 30000 | [1,...] | read-only | ignored
min.insync.replicas                                  | INT      | 1 | [1,...] | cluster-wide | live
node.id                                              | INT      | <required> | [0,...] | read-only | honoured
num.io.threads                                       | INT      | 8 | [1,...] | cluster-wide | ignored
num.network.threads                                  | INT      | 3 | [1,...] | cluster-wide | ignored
num.partitions                                       | INT      | 1 | [1,...] | read-only | honoured
num.recovery.threads.per.data.dir                    | INT      | 2 | [1,...] | cluster-wide | ignored
num.replica.alter.log.dirs.threads                   | INT      | null |  | read-only | ignored
num.replica.fetchers                                 | INT      | 1 |  | cluster-wide | live
offset.metadata.max.bytes                            | INT      | 4096 |  | read-only | ignored
offsets.commit.timeout.ms                            | INT      | 5000 | [1,...] | read-only | ignored
offsets.load.buffer.size                             | INT      | 5242880 | [1,...] | read-only | ignored
offsets.retention.check.interval.ms                  | LONG     | 600000 | [1,...] | read-only | honoured
offsets.retention.minutes                            | INT      | 10080 | [1,...] | read-only | honoured
offsets.topic.compression.codec                      | INT      | 0 |  | read-only | ignored
offsets.topic.num.partitions                         | INT      | 50 | [1,...] | read-only | honoured
offsets.topic.replication.factor                     | SHORT    | 3 | [1,...] | read-only | honoured
offsets.topic.segment.bytes                          | INT      | 104857600 | [1,...] | read-only | honoured
principal.builder.class                              | CLASS    | org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder |  | per-broker | refused
process.roles                                        | LIST     | <required> | [broker, controller] | read-only | honoured
producer.id.expiration.ms                            | INT      | 86400000 | [1,...] | cluster-wide | live
producer.purgatory.purge.interval.requests           | INT      | 1000 |  | read-only | ignored
queued.max.request.bytes                             | LONG     | -1 |  | read-only | ignored
queued.max.requests                                  | INT      | 500 | [1,...] | read-only | ignored
quota.window.num                                     | INT      | 11 | [1,...] | read-only | ignored
quota.window.size.seconds                            | INT      | 1 | [1,...] | read-only | ignored
remote.fetch.max.wait.ms                             | INT      | 500 | [1,...] | cluster-wide | ignored
remote.list.offsets.request.timeout.ms               | LONG     | 30000 | [1,...] | cluster-wide | ignored
remote.log.index.file.cache.total.size.bytes         | LONG     | 1073741824 | [1,...] | cluster-wide | ignored
remote.log.manager.copier.thread.pool.size           | INT      | 10 | [1,...] | cluster-wide | ignored
remote.log.manager.copy.max.bytes.per.second         | LONG     | 9223372036854775807 | [1,...] | cluster-wide | ignored
remote.log.manager.copy.quota.window.num             | INT      | 11 | [1,...] | read-only | ignored
remote.log.manager.copy.quota.window.size.seconds    | INT      | 1 | [1,...] | read-only | ignored
remote.log.manager.expiration.thread.pool.size       | INT      | 10 | [1,...] | cluster-wide | ignored
remote.log.manager.fetch.max.bytes.per.second        | LONG     | 9223372036854775807 | [1,...] | cluster-wide | ignored
remote.log.manager.fetch.quota.window.num            | INT      | 11 | [1,...] | read-only | ignored
remote.log.manager.fetch.quota.window.size.seconds   | INT      | 1 | [1,...] | read-only | ignored
remote.log.manager.task.interval.ms                  | LONG     | 30000 | [1,...] | read-only | ignored
remote.log.manager.thread.pool.size                  | INT      | 2 | [1,...] | read-only | ignored
remote.log.metadata.custom.metadata.max.bytes        | INT      | 128 | [0,...] | read-only | ignored
remote.log.metadata.manager.class.name               | STRING   | org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager | non-empty string | read-only | ignored
remote.log.metadata.manager.class.path               | STRING   | null |  | read-only | ignored
remote.log.metadata.manager.impl.prefix              | STRING   | rlmm.config. | non-empty string | read-only | ignored
remote.log.metadata.manager.listener.name            | STRING   | null | non-empty string | read-only | ignored
remote.log.reader.max.pending.tasks                  | INT      | 100 | [1,...] | read-only | ignored
remote.log.reader.threads                            | INT      | 10 | [1,...] | cluster-wide | ignored
remote.log.storage.manager.class.name                | STRING   | null | non-empty string | read-only | ignored
remote.log.storage.manager.class.path                | STRING   | null |  | read-only | ignored
remote.log.storage.manager.impl.prefix               | STRING   | rsm.config. | non-empty string | read-only | ignored
remote.log.storage.system.enable                     | BOOLEAN  | false |  | read-only | ignored
replica.alter.log.dirs.io.max.bytes.per.second       | LONG     | 9223372036854775807 | [0,...] | cluster-wide | ignored
replica.fetch.backoff.ms                             | INT      | 1000 | [0,...] | read-only | honoured
replica.fetch.max.bytes                              | INT      | 1048576 | [0,...] | read-only | honoured
replica.fetch.min.bytes                              | INT      | 1 |  | read-only | ignored
replica.fetch.response.max.bytes                     | INT      | 10485760 | [0,...] | read-only | ignored
replica.fetch.wait.max.ms                            | INT      | 500 |  | read-only | honoured
replica.high.watermark.checkpoint.interval.ms        | LONG     | 5000 |  | read-only | ignored
replica.lag.time.max.ms                              | LONG     | 30000 |  | read-only | honoured
replica.selector.class                               | STRING   | null |  | read-only | ignored
replica.socket.receive.buffer.bytes                  | INT      | 65536 |  | read-only | ignored
replica.socket.timeout.ms                            | INT      | 30000 |  | read-only | ignored
replication.quota.window.num                         | INT      | 11 | [1,...] | read-only | ignored
replication.quota.window.size.seconds                | INT      | 1 | [1,...] | read-only | ignored
request.timeout.ms                                   | INT      | 30000 |  | read-only | ignored
sasl.client.callback.handler.class                   | CLASS    | null |  | read-only | refused
sasl.enabled.mechanisms                              | LIST     | GSSAPI |  | per-broker | honoured
sasl.jaas.config                                     | PASSWORD | null |  | per-broker | honoured
sasl.kerberos.kinit.cmd                              | STRING   | /usr/bin/kinit |  | per-broker | refused
sasl.kerberos.min.time.before.relogin                | LONG     | 60000 |  | per-broker | refused
sasl.kerberos.principal.to.local.rules               | LIST     | DEFAULT |  | per-broker | refused
sasl.kerberos.service.name                           | STRING   | null |  | per-broker | refused
sasl.kerberos.ticket.renew.jitter                    | DOUBLE   | 0.05 |  | per-broker | refused
sasl.kerberos.ticket.renew.window.factor             | DOUBLE   | 0.8 |  | per-broker | refused
sasl.login.callback.handler.class                    | CLASS    | null |  | read-only | refused
sasl.login.class                                     | CLASS    | null |  | read-only | refused
sasl.login.connect.timeout.ms                        | INT      | null |  | read-only | refused
sasl.login.read.timeout.ms                           | INT      | null |  | read-only | refused
sasl.login.refresh.buffer.seconds                    | SHORT    | 300 |  | per-broker | refused
sasl.login.refresh.min.period.seconds                | SHORT    | 60 |  | per-broker | refused
sasl.login.refresh.window.factor                     | DOUBLE   | 0.8 |  | per-broker | refused
sasl.login.refresh.window.jitter                     | DOUBLE   | 0.05 |  | per-broker | refused
sasl.login.retry.backoff.max.ms                      | LONG     | 10000 |  | read-only | refused
sasl.login.retry.backoff.ms                          | LONG     | 100 |  | read-only | refused
sasl.mechanism.controller.protocol                   | STRING   | GSSAPI |  | read-only | honoured
sasl.mechanism.inter.broker.protocol                 | STRING   | GSSAPI |  | per-broker | honoured
sasl.oauthbearer.clock.skew.seconds                  | INT      | 30 |  | read-only | refused
sasl.oauthbearer.expected.audience                   | LIST     | null |  | read-only | refused
sasl.oauthbearer.expected.issuer                     | STRING   | null |  | read-only | refused
sasl.oauthbearer.jwks.endpoint.refresh.ms            | LONG     | 3600000 |  | read-only | refused
sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms  | LONG     | 10000 |  | read-only | refused
sasl.oauthbearer.jwks.endpoint.retry.backoff.ms      | LONG     | 100 |  | read-only | refused
sasl.oauthbearer.jwks.endpoint.url                   | STRING   | null |  | read-only | refused
sasl.oauthbearer.scope.claim.name                    | STRING   | scope |  | read-only | refused
sasl.oauthbearer.sub.claim.name                      | STRING   | sub |  | read-only | refused
sasl.oauthbearer.token.endpoint.url                  | STRING   | null |  | read-only | refused
sasl.server.callback.handler.class                   | CLASS    | null |  | read-only | refused
sasl.server.max.receive.size                         | INT      | 524288 |  | read-only | honoured
security.inter.broker.protocol                       | STRING   | PLAINTEXT | [PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL] | read-only | honoured
security.providers                                   | STRING   | null |  | read-only | ignored
share.coordinator.append.linger.ms                   | INT      | 10 | [0,...] | read-only | ignored
share.coordinator.load.buffer.size                   | INT      | 5242880 | [1,...] | read-only | ignored
share.coordinator.snapshot.update.records.per.snapshot | INT      | 500 | [0,...] | read-only | ignored
share.coordinator.state.topic.compression.codec      | INT      | 0 |  | read-only | ignored
share.coordinator.state.topic.min.isr                | SHORT    | 2 | [1,...] | read-only | ignored
share.coordinator.state.topic.num.partitions         | INT      | 50 | [1,...] | read-only | ignored
share.coordinator.state.topic.replication.factor     | SHORT    | 3 | [1,...] | read-only | ignored
share.coordinator.state.topic.segment.bytes          | INT      | 104857600 | [1,...] | read-only | ignored
share.coordinator.threads                            | INT      | 1 | [1,...] | read-only | ignored
share.coordinator.write.timeout.ms                   | INT      | 5000 | [1,...] | read-only | ignored
share.fetch.purgatory.purge.interval.requests        | INT      | 1000 |  | read-only | ignored
socket.connection.setup.timeout.max.ms               | LONG     | 30000 |  | read-only | ignored
socket.connection.setup.timeout.ms                   | LONG     | 10000 |  | read-only | ignored
socket.listen.backlog.size                           | INT      | 50 | [1,...] | read-only | ignored
socket.receive.buffer.bytes                          | INT      | 102400 |  | read-only | ignored
socket.request.max.bytes                             | INT      | 104857600 | [1,...] | read-only | ignored
socket.send.buffer.bytes                             | INT      | 102400 |  | read-only | ignored
ssl.allow.dn.changes                                 | BOOLEAN  | false |  | read-only | ignored
ssl.allow.san.changes                                | BOOLEAN  | false |  | read-only | ignored
ssl.cipher.suites                                    | LIST     |  |  | per-broker | ignored
ssl.client.auth                                      | STRING   | none | [required, requested, none] | per-broker | honoured
ssl.enabled.protocols                                | LIST     | TLSv1.2,TLSv1.3 |  | per-broker | ignored
ssl.endpoint.identification.algorithm                | STRING   | https |  | per-broker | ignored
ssl.engine.factory.class                             | CLASS    | null |  | per-broker | ignored
ssl.key.password                                     | PASSWORD | null |  | per-broker | honoured
ssl.keymanager.algorithm                             | STRING   | SunX509 |  | per-broker | ignored
ssl.keystore.certificate.chain                       | PASSWORD | null |  | per-broker | ignored
ssl.keystore.key                                     | PASSWORD | null |  | per-broker | ignored
ssl.keystore.location                                | STRING   | null |  | per-broker | honoured
ssl.keystore.password                                | PASSWORD | null |  | per-broker | honoured
ssl.keystore.type                                    | STRING   | JKS |  | per-broker | honoured
ssl.principal.mapping.rules                          | STRING   | DEFAULT |  | read-only | honoured
ssl.protocol                                         | STRING   | TLSv1.3 |  | per-broker | ignored
ssl.provider                                         | STRING   | null |  | per-broker | ignored
ssl.secure.random.implementation                     | STRING   | null |  | per-broker | ignored
ssl.trustmanager.algorithm                           | STRING   | PKIX |  | per-broker | ignored
ssl.truststore.certificates                          | PASSWORD | null |  | per-broker | ignored
ssl.truststore.location                              | STRING   | null |  | per-broker | honoured
ssl.truststore.password                              | PASSWORD | null |  | per-broker | honoured
ssl.truststore.type                                  | STRING   | JKS |  | per-broker | honoured
super.users                                          | STRING   | null |  | read-only | honoured
telemetry.max.bytes                                  | INT      | 1048576 | [1,...] | read-only | ignored
transaction.abort.timed.out.transaction.cleanup.interval.ms | INT      | 10000 | [1,...] | read-only | honoured
transaction.max.timeout.ms                           | INT      | 900000 | [1,...] | read-only | honoured
transaction.partition.verification.enable            | BOOLEAN  | true |  | cluster-wide | honoured
transaction.remove.expired.transaction.cleanup.interval.ms | INT      | 3600000 | [1,...] | read-only | honoured
transaction.state.log.load.buffer.size               | INT      | 5242880 | [1,...] | read-only | ignored
transaction.state.log.min.isr                        | INT      | 2 | [1,...] | read-only | honoured
transaction.state.log.num.partitions                 | INT      | 50 | [1,...] | read-only | honoured
transaction.state.log.replication.factor             | SHORT    | 3 | [1,...] | read-only | honoured
transaction.state.log.segment.bytes                  | INT      | 104857600 | [1,...] | read-only | honoured
transactional.id.expiration.ms                       | INT      | 604800000 | [1,...] | read-only | honoured
unclean.leader.election.enable                       | BOOLEAN  | false |  | cluster-wide | live
"""

TOPIC_TABLE = """
cleanup.policy                           | LIST     | delete | [compact, delete] | honoured
compression.gzip.level                   | INT      | -1 | [1,...,9] or -1 | honoured
compression.lz4.level                    | INT      | 9 | [1,...,17] | honoured
compression.type                         | STRING   | producer | [uncompressed, zstd, lz4, snappy, gzip, producer] | default-only
compression.zstd.level                   | INT      | 3 | [-131072,...,22] | honoured
delete.retention.ms                      | LONG     | 86400000 | [0,...] | honoured
file.delete.delay.ms                     | LONG     | 60000 | [0,...] | default-only
flush.messages                           | LONG     | 9223372036854775807 | [1,...] | honoured
flush.ms                                 | LONG     | 9223372036854775807 | [0,...] | honoured
follower.replication.throttled.replicas  | LIST     |  | [partitionId]:[brokerId],[partitionId]:[brokerId],... | default-only
index.interval.bytes                     | INT      | 4096 | [0,...] | default-only
leader.replication.throttled.replicas    | LIST     |  | [partitionId]:[brokerId],[partitionId]:[brokerId],... | default-only
local.retention.bytes                    | LONG     | -2 | [-2,...] | default-only
local.retention.ms                       | LONG     | -2 | [-2,...] | default-only
max.compaction.lag.ms                    | LONG     | 9223372036854775807 | [1,...] | honoured
max.message.bytes                        | INT      | 1048588 | [0,...] | honoured
message.timestamp.after.max.ms           | LONG     | 3600000 | [0,...] | default-only
message.timestamp.before.max.ms          | LONG     | 9223372036854775807 | [0,...] | default-only
message.timestamp.type                   | STRING   | CreateTime | [CreateTime, LogAppendTime] | honoured
min.cleanable.dirty.ratio                | DOUBLE   | 0.5 | [0,...,1] | honoured
min.compaction.lag.ms                    | LONG     | 0 | [0,...] | honoured
min.insync.replicas                      | INT      | 1 | [1,...] | honoured
preallocate                              | BOOLEAN  | false |  | default-only
remote.log.copy.disable                  | BOOLEAN  | false |  | default-only
remote.log.delete.on.disable             | BOOLEAN  | false |  | default-only
remote.storage.enable                    | BOOLEAN  | false |  | default-only
retention.bytes                          | LONG     | -1 |  | honoured
retention.ms                             | LONG     | 604800000 | [-1,...] | honoured
segment.bytes                            | INT      | 1073741824 | [1048576,...] | honoured
segment.index.bytes                      | INT      | 10485760 | [4,...] | default-only
segment.jitter.ms                        | LONG     | 0 | [0,...] | default-only
segment.ms                               | LONG     | 604800000 | [1,...] | honoured
unclean.leader.election.enable           | BOOLEAN  | false |  | honoured
"""

# pykraft's own server.properties keys (not Kafka's): TLS from PEM files (node/config/build.py). Every key starting
# with `pykraft.` is pykraft's own too (pykraft.metrics.port, pykraft.log.format, pykraft.logs.dir,
# pykraft.produce.enable).
PYKRAFT_KEYS = ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location")
PYKRAFT_PREFIX = "pykraft."

# Kafka's ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS: a topic config and the broker keys that give its
# default, highest precedence first; `*N` multiplies the broker key's value into the topic config's unit.
TOPIC_SYNONYMS = """
cleanup.policy                   | log.cleanup.policy
compression.gzip.level           | compression.gzip.level
compression.lz4.level            | compression.lz4.level
compression.type                 | compression.type
compression.zstd.level           | compression.zstd.level
delete.retention.ms              | log.cleaner.delete.retention.ms
file.delete.delay.ms             | log.segment.delete.delay.ms
flush.messages                   | log.flush.interval.messages
flush.ms                         | log.flush.interval.ms, log.flush.scheduler.interval.ms
index.interval.bytes             | log.index.interval.bytes
local.retention.bytes            | log.local.retention.bytes
local.retention.ms               | log.local.retention.ms
max.compaction.lag.ms            | log.cleaner.max.compaction.lag.ms
max.message.bytes                | message.max.bytes
message.timestamp.after.max.ms   | log.message.timestamp.after.max.ms
message.timestamp.before.max.ms  | log.message.timestamp.before.max.ms
message.timestamp.type           | log.message.timestamp.type
min.cleanable.dirty.ratio        | log.cleaner.min.cleanable.ratio
min.compaction.lag.ms            | log.cleaner.min.compaction.lag.ms
min.insync.replicas              | min.insync.replicas
preallocate                      | log.preallocate
retention.bytes                  | log.retention.bytes
retention.ms                     | log.retention.ms, log.retention.minutes*60000, log.retention.hours*3600000
segment.bytes                    | log.segment.bytes
segment.index.bytes              | log.index.size.max.bytes
segment.jitter.ms                | log.roll.jitter.ms, log.roll.jitter.hours*3600000
segment.ms                       | log.roll.ms, log.roll.hours*3600000
unclean.leader.election.enable   | unclean.leader.election.enable
"""
