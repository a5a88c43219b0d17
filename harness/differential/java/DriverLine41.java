/*
 * Kafka 4.1 (and 4.2, which changed nothing the driver calls): what changed since 4.0.
 * - ConfigurationControlManager.updateFeatures(updates, upgradeTypes, validateOnly,
 *   curClaimEpoch): QuorumController.updateFeatures passes the epoch it claimed as the
 *   active controller (the driver's controller is at epoch 1).
 */
package org.apache.kafka.controller;

import java.util.Map;

import static org.apache.kafka.controller.DriverReflection.call;

class DriverLine41 extends DriverLine40 {
    @Override
    String name() {
        return "4.1";
    }

    @Override
    ControllerResult<?> updateFeatures(DriverState st, Map<String, Short> updates,
                                       Map<String, org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType> types) {
        return (ControllerResult<?>) call(ConfigurationControlManager.class, st.configurationControl,
            "updateFeatures", updates, types, false, 1);
    }
}
