    // ---- The stale broker-to-ELR index (kafka-chaos finding elr-index-stale-after-min-isr-change).
    // Test methods to paste into org.apache.kafka.controller.ReplicationControlManagerTest (4.3
    // API; every import they need is already in that file). All five fail on 4.3.1 and pass
    // with fix/clear-elr-updates-index.patch (4.3.1 is the release whose test sources and test
    // jars could be fetched here; 4.0-4.2 lack the 3-argument incrementalAlterConfigs).
    // junit/run_kafka_test.sh pastes them into a release's own ReplicationControlManagerTest.java
    // and runs them.

    /** foo-0 on [1, 2, 3] with min ISR 3; broker 3 fenced (ISR [1, 2], ELR [3]); then
     * min.insync.replicas set to 2 as the controller does it: ConfigRecord + ClearElrRecord. */
    private static TopicIdPartition setUpFormerElrMember(ReplicationControlTestContext ctx, ConfigResource minIsrScope) {
        ctx.registerBrokers(1, 2, 3);
        ctx.unfenceBrokers(1, 2, 3);
        CreatableTopicResult foo = ctx.createTestTopic("foo", new int[][] {new int[] {1, 2, 3}});
        TopicIdPartition tp = new TopicIdPartition(foo.topicId(), 0);
        ctx.alterTopicConfig("foo", TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, "3");
        ctx.fenceBrokers(Set.of(3));
        PartitionRegistration partition = ctx.replicationControl.getPartition(tp.topicId(), 0);
        assertArrayEquals(new int[] {3}, partition.elr, partition.toString());
        ctx.replay(ctx.configurationControl.incrementalAlterConfigs(
            Map.of(minIsrScope, Map.of(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG,
                new AbstractMap.SimpleImmutableEntry<>(AlterConfigOp.OpType.SET, "2"))),
            false, false).records());
        partition = ctx.replicationControl.getPartition(tp.topicId(), 0);
        assertArrayEquals(new int[] {}, partition.elr, partition.toString());
        return tp;
    }

    @Test
    public void testClearElrRecordRemovesBrokerFromElrIndex() {
        ReplicationControlTestContext ctx = new ReplicationControlTestContext.Builder()
            .setIsElrEnabled(true).build();
        setUpFormerElrMember(ctx, new ConfigResource(ConfigResource.Type.TOPIC, "foo"));
        // Broker 3 is in no partition's ELR any more: the index must not list it.
        assertFalse(ctx.replicationControl.brokersToElrs().partitionsWithBrokerInElr(3).hasNext());
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    public void testUncleanShutdownOfFormerElrMemberAfterTopicDeletion(boolean clusterLevel) {
        ReplicationControlTestContext ctx = new ReplicationControlTestContext.Builder()
            .setIsElrEnabled(true).build();
        TopicIdPartition tp = setUpFormerElrMember(ctx, clusterLevel
            ? new ConfigResource(ConfigResource.Type.BROKER, "")
            : new ConfigResource(ConfigResource.Type.TOPIC, "foo"));
        ctx.deleteTopic(anonymousContextFor(ApiKeys.DELETE_TOPICS), tp.topicId());
        // What ClusterControlManager.registerBroker runs for a broker back from an unclean
        // shutdown. It threw RuntimeException("Topic ID ... existed in isrMembers, but not in
        // the topics map."): QuorumController treats that as a fault and renounces leadership.
        List<ApiMessageAndVersion> records = new ArrayList<>();
        ctx.replicationControl.handleBrokerShutdown(3, false, records);
        ctx.replay(records);
    }

    @Test
    public void testUnregisterFormerElrMemberAfterTopicDeletion() {
        ReplicationControlTestContext ctx = new ReplicationControlTestContext.Builder()
            .setIsElrEnabled(true).build();
        TopicIdPartition tp = setUpFormerElrMember(ctx, new ConfigResource(ConfigResource.Type.TOPIC, "foo"));
        ctx.deleteTopic(anonymousContextFor(ApiKeys.DELETE_TOPICS), tp.topicId());
        ctx.replay(ctx.replicationControl.unregisterBroker(3).records());
    }

    @Test
    public void testUncleanShutdownOfBrokerBackInElrWritesOneChange() {
        ReplicationControlTestContext ctx = new ReplicationControlTestContext.Builder()
            .setIsElrEnabled(true).build();
        TopicIdPartition tp = setUpFormerElrMember(ctx, new ConfigResource(ConfigResource.Type.TOPIC, "foo"));
        // Broker 3 comes back and catches up; brokers 1, 3 and 2 then fail in turn: broker 3
        // re-enters the ELR (ISR [2], ELR [3]), then the ISR empties (ELR [2, 3]).
        ctx.unfenceBrokers(3);
        ctx.alterPartition(tp, 1, isrWithDefaultEpoch(1, 2, 3), LeaderRecoveryState.RECOVERED);
        ctx.fenceBrokers(Set.of(1));
        ctx.fenceBrokers(Set.of(1, 3));
        ctx.fenceBrokers(Set.of(1, 2, 3));
        PartitionRegistration partition = ctx.replicationControl.getPartition(tp.topicId(), 0);
        assertArrayEquals(new int[] {2, 3}, partition.elr, partition.toString());
        List<ApiMessageAndVersion> records = new ArrayList<>();
        ctx.replicationControl.handleBrokerShutdown(3, false, records);
        // KIP-966: one change of the partition (one partition epoch) when broker 3 registers.
        assertEquals(1, records.stream().filter(r -> r.message() instanceof PartitionChangeRecord).count(),
            records.toString());
    }
