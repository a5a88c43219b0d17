/*
 * Kafka 3.9: what changed since 3.8.
 * - Unclean leader election in KRaft (KAFKA-12670 "Support configuring unclean leader
 *   election in KRaft"): ReplicationControlManager.maybeElectUncleanLeaders, a periodic
 *   task; ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic reads the config
 *   (DriverSetup asks a scratch manager, so the driver does not rely on the line for it).
 * - ClusterControlManager.registerBroker(request, offset, finalizedFeatures) without the
 *   request version: this line does not read PreviousBrokerEpoch, every new incarnation gets
 *   the unclean-shutdown treatment.
 * - CreateTopicsRequestData.CreatableTopicConfig (KAFKA-17095 fixed the spelling).
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.metadata.FinalizedControllerFeatures;

import java.util.List;

import static org.apache.kafka.controller.DriverReflection.call;
import static org.apache.kafka.controller.DriverReflection.classOrNull;

class DriverLine39 extends DriverLine38 {
    @Override
    String name() {
        return "3.9";
    }

    @Override
    void registrationNotes(boolean clean, List<String> notes) {
        if (clean) {
            notes.add("this build's controller does not read PreviousBrokerEpoch: it handles "
                + "every new incarnation as an unclean shutdown");
        }
    }

    @Override
    ControllerResult<?> registerBroker(ClusterControlManager cluster, BrokerRegistrationRequestData request,
                                       long offset, FinalizedControllerFeatures finalized, short apiVersion) {
        return (ControllerResult<?>) call(ClusterControlManager.class, cluster, "registerBroker",
            request, offset, finalized);
    }

    @Override
    Class<?> createTopicConfigClass() {
        return classOrNull("org.apache.kafka.common.message.CreateTopicsRequestData$CreatableTopicConfig");
    }

    @Override
    String noPeriodicUncleanElection() {
        return null;
    }

    @Override
    ControllerResult<?> maybeElectUncleanLeaders(ReplicationControlManager replication) {
        return (ControllerResult<?>) call(ReplicationControlManager.class, replication,
            "maybeElectUncleanLeaders");
    }
}
