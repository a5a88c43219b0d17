package org.apache.kafka.controller;

import org.apache.kafka.common.DirectoryId;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.requests.AlterPartitionRequest;
import org.apache.kafka.metadata.LeaderRecoveryState;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.metadata.Replicas;
import org.apache.kafka.metadata.placement.DefaultDirProvider;
import org.apache.kafka.metadata.placement.PartitionAssignment;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * KIP-966: once a reassignment completes, the ELR holds only replicas of the final replica
 * set. PartitionChangeBuilder completes the reassignment first and then computes the ELR
 * (when the new ISR is below min ISR) from the old ELR and the old ISR, taking out only the
 * new ISR and unclean-shutdown replicas: a replica the reassignment just removed stays in
 * the ELR, and so does an adding replica (once in the ISR) when the reassignment is
 * cancelled.
 */
@Timeout(value = 40)
public class PartitionChangeBuilderElrReassignmentTest {
    private static final DefaultDirProvider DEFAULT_DIR_PROVIDER = brokerId -> DirectoryId.UNASSIGNED;
    private static final Uuid TOPIC_ID = Uuid.fromString("FbrrdcfiR-KC2CPSTHaJrg");
    private static final int MIN_ISR = 3;

    private static PartitionRegistration partition(int[] replicas, int[] adding, int[] removing,
                                                   int[] isr, int[] elr) {
        return new PartitionRegistration.Builder()
            .setReplicas(replicas)
            .setDirectories(DirectoryId.unassignedArray(replicas.length))
            .setAddingReplicas(adding)
            .setRemovingReplicas(removing)
            .setIsr(isr)
            .setElr(elr)
            .setLastKnownElr(new int[] {})
            .setLeader(1)
            .setLeaderRecoveryState(LeaderRecoveryState.RECOVERED)
            .setLeaderEpoch(100)
            .setPartitionEpoch(200)
            .build();
    }

    private static PartitionChangeBuilder builder(PartitionRegistration partition) {
        // Every broker alive; ELR on, as on a 4.x cluster with eligible.leader.replicas.version=1.
        return new PartitionChangeBuilder(partition, TOPIC_ID, 0, r -> true,
                MetadataVersion.latestProduction(), MIN_ISR, true)
            .setDefaultDirProvider(DEFAULT_DIR_PROVIDER);
    }

    private static PartitionRegistration apply(PartitionRegistration partition, PartitionChangeBuilder builder) {
        Optional<ApiMessageAndVersion> record = builder.build();
        assertTrue(record.isPresent(), builder.toString());
        return partition.merge((PartitionChangeRecord) record.get().message());
    }

    private static void assertElrHoldsOnlyReplicas(PartitionRegistration partition) {
        for (int replica : partition.elr) {
            assertTrue(Replicas.contains(partition.replicas, replica),
                "ELR member " + replica + " is not a replica: " + partition);
        }
    }

    @Test
    public void testEligibleLeaderReplicas_IsrExpansionCompletingReassignmentDropsRemovedReplica() {
        // Reassigning [1, 2, 3] -> [1, 3, 4] with min ISR 3: broker 3 fell out of the ISR
        // (ELR [3]); then broker 4 catches up and the leader asks for ISR [1, 2, 4].
        PartitionRegistration partition = partition(new int[] {1, 2, 3, 4}, new int[] {4},
            new int[] {2}, new int[] {1, 2}, new int[] {3});

        partition = apply(partition, builder(partition).setTargetIsrWithBrokerStates(
            AlterPartitionRequest.newIsrToSimpleNewIsrWithBrokerEpochs(List.of(1, 2, 4))));

        // The reassignment completed: broker 2 is no longer a replica.
        assertArrayEquals(new int[] {1, 3, 4}, partition.replicas, partition.toString());
        assertArrayEquals(new int[] {1, 4}, partition.isr, partition.toString());
        // The ISR is below min ISR, so the ELR is kept, but only with replicas: [3], not [2, 3].
        assertElrHoldsOnlyReplicas(partition);
        assertArrayEquals(new int[] {3}, partition.elr, partition.toString());
    }

    @Test
    public void testEligibleLeaderReplicas_ReassignmentFromHealthyPartitionDropsRemovedReplica() {
        // The same case, reached from a healthy partition through the changes the controller makes.
        PartitionRegistration partition = partition(new int[] {1, 2, 3}, new int[] {},
            new int[] {}, new int[] {1, 2, 3}, new int[] {});

        // Broker 3 falls behind: ISR [1, 2] is below min ISR 3, so 3 joins the ELR.
        partition = apply(partition, builder(partition).setTargetIsrWithBrokerStates(
            AlterPartitionRequest.newIsrToSimpleNewIsrWithBrokerEpochs(List.of(1, 2))));
        assertArrayEquals(new int[] {3}, partition.elr, partition.toString());

        // Reassign to [1, 3, 4], as ReplicationControlManager#changePartitionReassignment does.
        PartitionReassignmentReplicas reassignment = new PartitionReassignmentReplicas(
            new PartitionAssignment(List.of(1, 2, 3), DEFAULT_DIR_PROVIDER),
            new PartitionAssignment(List.of(1, 3, 4), DEFAULT_DIR_PROVIDER));
        partition = apply(partition, builder(partition)
            .setTargetReplicas(reassignment.replicas())
            .setTargetRemoving(reassignment.removing())
            .setTargetAdding(reassignment.adding()));
        assertArrayEquals(new int[] {1, 3, 4, 2}, partition.replicas, partition.toString());
        assertArrayEquals(new int[] {3}, partition.elr, partition.toString());

        // Broker 4 catches up: the reassignment completes.
        partition = apply(partition, builder(partition).setTargetIsrWithBrokerStates(
            AlterPartitionRequest.newIsrToSimpleNewIsrWithBrokerEpochs(List.of(1, 2, 4))));
        assertArrayEquals(new int[] {1, 3, 4}, partition.replicas, partition.toString());
        assertElrHoldsOnlyReplicas(partition);
        assertArrayEquals(new int[] {3}, partition.elr, partition.toString());
    }

    @Test
    public void testEligibleLeaderReplicas_CancelledReassignmentDropsAddingReplica() {
        // Reassigning [1, 2, 3] -> [1, 4, 5] with min ISR 3: broker 4 caught up (ISR
        // [1, 2, 3, 4]), broker 3 fell out (ISR [1, 2, 4]), then broker 4 fell out below min
        // ISR (ISR [1, 2], ELR [4]). Now the reassignment is cancelled.
        PartitionRegistration partition = partition(new int[] {1, 2, 3, 4, 5}, new int[] {4, 5},
            new int[] {2, 3}, new int[] {1, 2}, new int[] {4});

        // As ReplicationControlManager#cancelPartitionReassignment does.
        PartitionReassignmentRevert revert = new PartitionReassignmentRevert(partition);
        partition = apply(partition, builder(partition)
            .setTargetIsr(revert.isr())
            .setTargetReplicas(revert.replicas())
            .setTargetRemoving(List.of())
            .setTargetAdding(List.of()));

        assertArrayEquals(new int[] {1, 2, 3}, partition.replicas, partition.toString());
        assertArrayEquals(new int[] {1, 2}, partition.isr, partition.toString());
        // Broker 4 is no longer a replica: it cannot stay in the ELR.
        assertElrHoldsOnlyReplicas(partition);
        assertArrayEquals(new int[] {}, partition.elr, partition.toString());
    }
}
