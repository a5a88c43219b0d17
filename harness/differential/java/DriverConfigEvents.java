/*
 * Events of ConfigurationControlManager: alterConfig (IncrementalAlterConfigs SET, or
 * DELETE for a null value) on a topic, a broker or the cluster default.
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.admin.AlterConfigOp.OpType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.requests.ApiError;

import java.util.AbstractMap;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import static org.apache.kafka.controller.DriverProtocol.Refused;
import static org.apache.kafka.controller.DriverProtocol.require;

final class DriverConfigEvents {
    static final String IGNORES_UNCLEAN_CONFIG = "this build's controller ignores "
        + "unclean.leader.election.enable (ConfigurationControlManager."
        + "uncleanLeaderElectionEnabledForTopic is always false before 3.9): only electLeaders "
        + "type unclean elects an out-of-sync leader";

    private final DriverState st;

    DriverConfigEvents(DriverState st) {
        this.st = st;
    }

    /** incrementalAlterConfigs (SET, or DELETE for a null value) on a topic, or on the
     * cluster default (no topic) or a broker ("broker": id). */
    ObjectNode alterConfig(JsonNode e, List<String> notes) {
        if (!st.uncleanConfigHonoured && e.path("configs").has("unclean.leader.election.enable")) {
            notes.add(IGNORES_UNCLEAN_CONFIG);
        }
        ConfigResource resource;
        if (e.hasNonNull("topic")) {
            resource = new ConfigResource(ConfigResource.Type.TOPIC, e.get("topic").asText());
        } else if (e.hasNonNull("broker")) {
            resource = new ConfigResource(ConfigResource.Type.BROKER, e.get("broker").asText());
        } else {
            resource = new ConfigResource(ConfigResource.Type.BROKER, "");
        }
        Map<String, Map.Entry<OpType, String>> changes = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = require(e, "configs").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> c = it.next();
            boolean delete = c.getValue().isNull();
            changes.put(c.getKey(), new AbstractMap.SimpleImmutableEntry<>(
                delete ? OpType.DELETE : OpType.SET, delete ? null : c.getValue().asText()));
        }
        Map<ConfigResource, Map<String, Map.Entry<OpType, String>>> request = new HashMap<>();
        request.put(resource, changes);
        ControllerResult<Map<ConfigResource, ApiError>> result =
            st.line.incrementalAlterConfigs(st.configurationControl, request);
        st.replayAll(result.records());
        ApiError error = result.response().get(resource);
        if (error != null && error.isFailure()) {
            throw new Refused(error.error(), error.messageWithFallback());
        }
        return null;
    }
}
