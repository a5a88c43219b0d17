/*
 * Kafka 4.3 (and 4.4, whose only difference for the driver is where two client utilities
 * live: DriverKafkaUtils): what changed since 4.2.
 * - ReplicationControlManager.createTopics(context, request, describable, forwarded) and
 *   ConfigurationControlManager.incrementalAlterConfigs(configChanges,
 *   newlyCreatedResource, forwarded): whether the request was forwarded by a broker. The
 *   driver's requests come to the controller directly: false.
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.requests.ApiError;

import java.util.Map;
import java.util.Set;

import static org.apache.kafka.controller.DriverReflection.call;

class DriverLine43 extends DriverLine41 {
    @Override
    String name() {
        return "4.3";
    }

    @Override
    @SuppressWarnings("unchecked")
    ControllerResult<CreateTopicsResponseData> createTopics(ReplicationControlManager replication,
        ControllerRequestContext context, CreateTopicsRequestData request, Set<String> names) {
        return (ControllerResult<CreateTopicsResponseData>) call(ReplicationControlManager.class,
            replication, "createTopics", context, request, names, false);
    }

    @Override
    @SuppressWarnings("unchecked")
    ControllerResult<Map<ConfigResource, ApiError>> incrementalAlterConfigs(
        ConfigurationControlManager config, Map<ConfigResource, Map<String,
        Map.Entry<org.apache.kafka.clients.admin.AlterConfigOp.OpType, String>>> request) {
        return (ControllerResult<Map<ConfigResource, ApiError>>) call(ConfigurationControlManager.class,
            config, "incrementalAlterConfigs", request, false, false);
    }
}
