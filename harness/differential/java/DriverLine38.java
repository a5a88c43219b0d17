/*
 * Kafka 3.8: what changed since 3.7.
 * - The controller handles an unclean shutdown (KAFKA-15586 "Clean shutdown detection -
 *   server side"): ClusterControlManager.Builder.setBrokerUncleanShutdownHandler with a
 *   ClusterControlManager.BrokerUncleanShutdownHandler (brokerId, records), which
 *   QuorumController points at ReplicationControlManager.handleBrokerUncleanShutdown.
 */
package org.apache.kafka.controller;

import java.util.List;

import static org.apache.kafka.controller.DriverReflection.classOrNull;
import static org.apache.kafka.controller.DriverReflection.invoke;
import static org.apache.kafka.controller.DriverReflection.proxy;

class DriverLine38 extends DriverLine37 {
    @Override
    String name() {
        return "3.8";
    }

    @Override
    void setShutdownHandler(ClusterControlManager.Builder builder, DriverState st) {
        Class<?> handler = classOrNull(
            "org.apache.kafka.controller.ClusterControlManager$BrokerUncleanShutdownHandler");
        invoke(builder, "setBrokerUncleanShutdownHandler", proxy(handler, args ->
            invoke(st.replicationControl, "handleBrokerUncleanShutdown", args[0], args[1])));
    }

    @Override
    void registrationNotes(boolean clean, List<String> notes) {
    }
}
