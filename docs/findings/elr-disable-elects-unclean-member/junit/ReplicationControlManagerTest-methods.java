    // ---- ELR turned off live (kafka-chaos finding elr-disable-elects-unclean-member).
    // Test methods to paste into org.apache.kafka.controller.ReplicationControlManagerTest (4.3
    // API; every import they need is already in that file, FeatureUpdate is named in full).
    // The first two fail on 4.3.1 and pass with fix/elr-off-ignores-elr.patch; the third, the
    // control with ELR left on, passes on both. junit/run_kafka_test.sh pastes them into a
    // release's own ReplicationControlManagerTest.java and runs them.

    /** foo-0 on [1, 2, 3], min ISR 2, ELR on, as the scenario elr-disabled-live leaves it:
     * broker 1 fenced (ISR [2, 3]), broker 2 fenced (ISR [3], ELR [2]), broker 3 fenced
     * (ISR [], ELR [2, 3], LastKnownELR [3]); broker 1 unfenced again (in neither). */
    private static TopicIdPartition setUpLeaderlessPartitionWithElr(ReplicationControlTestContext ctx) {
        ctx.registerBrokers(1, 2, 3);
        ctx.unfenceBrokers(1, 2, 3);
        CreatableTopicResult foo = ctx.createTestTopic("foo", new int[][] {new int[] {1, 2, 3}});
        TopicIdPartition tp = new TopicIdPartition(foo.topicId(), 0);
        ctx.alterTopicConfig("foo", TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, "2");
        ctx.fenceBrokers(Set.of(1));
        ctx.fenceBrokers(Set.of(1, 2));
        ctx.fenceBrokers(Set.of(1, 2, 3));
        ctx.unfenceBrokers(1);
        PartitionRegistration partition = ctx.replicationControl.getPartition(tp.topicId(), 0);
        assertEquals(NO_LEADER, partition.leader, partition.toString());
        assertArrayEquals(new int[] {}, partition.isr, partition.toString());
        assertArrayEquals(new int[] {2, 3}, partition.elr, partition.toString());
        assertArrayEquals(new int[] {3}, partition.lastKnownElr, partition.toString());
        return tp;
    }

    /** kafka-features.sh downgrade --feature eligible.leader.replicas.version=0, the call
     * QuorumController.updateFeatures makes. */
    private static void disableElr(ReplicationControlTestContext ctx) {
        ControllerResult<ApiError> result = ctx.configurationControl.updateFeatures(
            Map.of(EligibleLeaderReplicasVersion.FEATURE_NAME, EligibleLeaderReplicasVersion.ELRV_0.featureLevel()),
            Map.of(EligibleLeaderReplicasVersion.FEATURE_NAME,
                org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType.SAFE_DOWNGRADE),
            false, 0);
        assertEquals(ApiError.NONE, result.response());
        RecordTestUtils.replayAll(ctx.featureControl, result.records());
        assertFalse(ctx.featureControl.isElrFeatureEnabled());
    }

    /** Broker 2 registers after an unclean shutdown (ClusterControlManager.registerBroker calls
     * the shutdown handler with isCleanShutdown=false), then catches up and is unfenced. */
    private static PartitionRegistration uncleanReturnOfBroker2(ReplicationControlTestContext ctx, TopicIdPartition tp) {
        ctx.handleBrokersShutdown(false, 2);
        ctx.unfenceBrokers(2);
        return ctx.replicationControl.getPartition(tp.topicId(), 0);
    }

    @Test
    public void testElrDisabledLiveDoesNotElectUncleanlyShutDownElrMember() {
        ReplicationControlTestContext ctx = new ReplicationControlTestContext.Builder()
            .setIsElrEnabled(true).build();
        TopicIdPartition tp = setUpLeaderlessPartitionWithElr(ctx);
        disableElr(ctx);
        PartitionRegistration partition = uncleanReturnOfBroker2(ctx, tp);
        // KIP-966, "Compatibility, Deprecation, and Migration Plan": with ELR off "the controller
        // will also ignore the ELR fields". Broker 2 is not in the ISR, it may have lost
        // committed records, and unclean.leader.election.enable is false: it may not lead.
        assertNotEquals(2, partition.leader, partition.toString());
    }

    @Test
    public void testElrDisabledLiveRemovesElrFieldsOnNextPartitionChange() {
        ReplicationControlTestContext ctx = new ReplicationControlTestContext.Builder()
            .setIsElrEnabled(true).build();
        TopicIdPartition tp = setUpLeaderlessPartitionWithElr(ctx);
        disableElr(ctx);
        PartitionRegistration before = ctx.replicationControl.getPartition(tp.topicId(), 0);
        PartitionRegistration partition = uncleanReturnOfBroker2(ctx, tp);
        assertTrue(partition.partitionEpoch > before.partitionEpoch, partition.toString());
        // KIP-966: "all the ELR related fields will be removed on the next partition change".
        assertArrayEquals(new int[] {}, partition.elr, partition.toString());
        assertArrayEquals(new int[] {}, partition.lastKnownElr, partition.toString());
    }

    @Test
    public void testElrOnDoesNotElectUncleanlyShutDownElrMember() {
        // The control: the same with ELR left on. Broker 2's unclean registration removes it from
        // the ELR (ELR [3]); it is not elected.
        ReplicationControlTestContext ctx = new ReplicationControlTestContext.Builder()
            .setIsElrEnabled(true).build();
        TopicIdPartition tp = setUpLeaderlessPartitionWithElr(ctx);
        PartitionRegistration partition = uncleanReturnOfBroker2(ctx, tp);
        assertEquals(NO_LEADER, partition.leader, partition.toString());
        assertArrayEquals(new int[] {3}, partition.elr, partition.toString());
    }
