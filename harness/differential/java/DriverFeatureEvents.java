/*
 * Events of FeatureControlManager: updateFeature (UpdateFeatures of one feature); the levels
 * the build's controller supports (QuorumFeatures), which registrations advertise.
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType;
import org.apache.kafka.common.requests.ApiError;

import java.lang.reflect.Field;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeSet;

import static org.apache.kafka.controller.DriverProtocol.JSON;
import static org.apache.kafka.controller.DriverProtocol.ProtocolError;
import static org.apache.kafka.controller.DriverProtocol.Refused;
import static org.apache.kafka.controller.DriverProtocol.ints;
import static org.apache.kafka.controller.DriverProtocol.requireInt;
import static org.apache.kafka.controller.DriverProtocol.requireText;
import static org.apache.kafka.controller.DriverReflection.field;
import static org.apache.kafka.controller.DriverReflection.get;
import static org.apache.kafka.controller.DriverReflection.invoke;

final class DriverFeatureEvents {
    static final String ELR_FEATURE = "eligible.leader.replicas.version";

    private final DriverState st;

    DriverFeatureEvents(DriverState st) {
        this.st = st;
    }

    /** UpdateFeatures of one feature, as QuorumController.updateFeatures calls the build
     * (DriverLine*.updateFeatures). upgradeType: "upgrade", "safeDowngrade", "unsafeDowngrade"
     * (default: upgrade to a level at or above the current one, else safe downgrade, as
     * kafka-features.sh upgrade / downgrade send). A refusal is the answer. */
    ObjectNode updateFeature(JsonNode e) {
        String name = requireText(e, "name");
        short level = (short) requireInt(e, "level");
        Short current = st.featureControl.finalizedFeatures(Long.MAX_VALUE).featureMap().get(name);
        int now = current == null ? 0 : current;
        String type = e.path("upgradeType").asText(level >= now ? "upgrade" : "safeDowngrade");
        UpgradeType upgradeType;
        switch (type) {
            case "upgrade":
                upgradeType = UpgradeType.UPGRADE;
                break;
            case "safeDowngrade":
                upgradeType = UpgradeType.SAFE_DOWNGRADE;
                break;
            case "unsafeDowngrade":
                upgradeType = UpgradeType.UNSAFE_DOWNGRADE;
                break;
            default:
                throw new ProtocolError("upgradeType must be upgrade, safeDowngrade or unsafeDowngrade, not "
                    + type);
        }
        Map<String, Short> updates = new HashMap<>();
        updates.put(name, level);
        Map<String, UpgradeType> types = new HashMap<>();
        types.put(name, upgradeType);
        ControllerResult<?> result = st.line.updateFeatures(st, updates, types);
        ApiError error = st.line.updateFeaturesError(result.response(), name);
        st.replayAll(result.records());
        if (error != null && error.isFailure()) {
            throw new Refused(error.error(), error.messageWithFallback());
        }
        ObjectNode out = JSON.createObjectNode();
        Short after = st.featureControl.finalizedFeatures(Long.MAX_VALUE).featureMap().get(name);
        out.put("level", after == null ? 0 : after);
        out.put("elr", st.line.elrEnabled(st));
        return out;
    }

    /** The levels of a feature this build's controller supports, [min, max], or null. */
    static short[] supportedRange(DriverState st, String feature) {
        Map<?, ?> local = localSupportedFeatures(st);
        Object range = local == null ? null : local.get(feature);
        if (range == null) {
            return null;
        }
        return new short[] {(Short) invoke(range, "min"), (Short) invoke(range, "max")};
    }

    static Map<?, ?> localSupportedFeatures(DriverState st) {
        Field f = field(QuorumFeatures.class, "localSupportedFeatures");
        return f == null ? null : (Map<?, ?>) get(f, st.quorumFeatures);
    }

    /** {feature: [min, max]} this build's controller supports (QuorumFeatures). */
    static ObjectNode supportedFeatures(DriverState st) {
        ObjectNode out = JSON.createObjectNode();
        Map<?, ?> local = localSupportedFeatures(st);
        if (local != null) {
            TreeSet<String> names = new TreeSet<>();
            for (Object name : local.keySet()) {
                names.add(String.valueOf(name));
            }
            for (String name : names) {
                short[] range = supportedRange(st, name);
                out.set(name, ints(new int[] {range[0], range[1]}));
            }
        }
        return out;
    }
}
