/*
 * Index consistency (DriverIndexOracle), the part of ClusterControlManager: one
 * registerBrokerRecordOffsets entry per registration; the heartbeat manager's fenced state
 * as the registration's; active = not fenced, not shutting down; every registered directory
 * -> its broker (3.7+). Run after every event: the heartbeat manager moves without records.
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.BrokerRegistration;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.apache.kafka.controller.DriverIndexOracle.DIR_TO_BROKER;
import static org.apache.kafka.controller.DriverIndexOracle.HB_ACTIVE;
import static org.apache.kafka.controller.DriverIndexOracle.HB_BROKERS;
import static org.apache.kafka.controller.DriverIndexOracle.HB_FENCED;
import static org.apache.kafka.controller.DriverIndexOracle.HB_SHUTTING;
import static org.apache.kafka.controller.DriverIndexOracle.HEARTBEATS;
import static org.apache.kafka.controller.DriverIndexOracle.REGISTRATIONS;
import static org.apache.kafka.controller.DriverIndexOracle.REG_DIRS;
import static org.apache.kafka.controller.DriverIndexOracle.REG_OFFSETS;
import static org.apache.kafka.controller.DriverReflection.get;
import static org.apache.kafka.controller.DriverReflection.invokeMethod;

final class DriverBrokerIndexes {
    private DriverBrokerIndexes() {
    }

    /** The reports of the registrations' own indexes (registerBrokerRecordOffsets,
     * directoryToBroker), which the heartbeat part's do not name. */
    static final java.util.Set<String> REGISTRATION_INDEXES = java.util.Set.of("registerBrokerRecordOffsets",
        "directoryToBroker");

    /** registrations: whether to check the registrations' own indexes too
     * (registerBrokerRecordOffsets, directoryToBroker: timeline fields of
     * ClusterControlManager, changed, as the registrations, only by its replay of the broker
     * records); the heartbeat manager's part is checked always. */
    @SuppressWarnings("unchecked")
    static void checkBrokers(DriverState st, DriverIndexOracle.Sink out, boolean registrations) {
        if (REGISTRATIONS == null) {
            return;
        }
        Map<Integer, BrokerRegistration> regs = (Map<Integer, BrokerRegistration>) get(REGISTRATIONS, st.clusterControl);
        Map<Integer, Long> offsets = REG_OFFSETS == null || !registrations ? null
            : (Map<Integer, Long>) get(REG_OFFSETS, st.clusterControl);
        Object hb = HEARTBEATS == null ? null : get(HEARTBEATS, st.clusterControl);
        Map<Integer, Object> states = hb == null || HB_BROKERS == null ? null : (Map<Integer, Object>) get(HB_BROKERS, hb);
        Set<Object> active = hb == null || HB_ACTIVE == null ? null : (Set<Object>) get(HB_ACTIVE, hb);
        Map<Uuid, Integer> dirToBroker = DIR_TO_BROKER == null || !registrations ? null
            : (Map<Uuid, Integer>) get(DIR_TO_BROKER, st.clusterControl);
        int dirs = 0;
        int activeExpected = 0;
        for (Map.Entry<Integer, BrokerRegistration> r : regs.entrySet()) {
            int id = r.getKey();
            BrokerRegistration reg = r.getValue();
            if (offsets != null && !offsets.containsKey(id)) {
                out.report("registerBrokerRecordOffsets", "broker " + id, Arrays.asList("offsets", "missing", id),
                    () -> "broker " + id + " is registered (epoch " + reg.epoch() + ") but has no RegisterBrokerRecord offset");
            }
            if (states != null) {
                Object s = states.get(id);
                if (s == null) {
                    out.report("heartbeatManager", "broker " + id, Arrays.asList("hb", "missing", id),
                        () -> "broker " + id + " is registered but the heartbeat manager does not track it");
                } else if (HB_FENCED != null) {
                    boolean fenced = (Boolean) invokeMethod(HB_FENCED, s);
                    if (fenced != reg.fenced()) {
                        out.report("heartbeatManager", "broker " + id, Arrays.asList("hb", "fenced", id, reg.fenced()),
                            () -> "broker " + id + " is " + (reg.fenced() ? "fenced" : "unfenced")
                                + " in its registration but " + (fenced ? "fenced" : "unfenced") + " in the heartbeat manager");
                    }
                    boolean shutting = HB_SHUTTING != null && (Boolean) invokeMethod(HB_SHUTTING, s);
                    boolean isActive = !fenced && !shutting;
                    activeExpected += isActive ? 1 : 0;
                    if (active != null && active.contains(s) != isActive) {
                        out.report("heartbeatManager.active", "broker " + id, Arrays.asList("hb", "active", id, isActive),
                            () -> "broker " + id + " (fenced " + fenced + ", shutting down " + shutting + ") is "
                                + (isActive ? "not " : "") + "in the heartbeat manager's active set");
                    }
                }
            }
            if (dirToBroker != null && REG_DIRS != null) {
                for (Uuid dir : (List<Uuid>) invokeMethod(REG_DIRS, reg)) {
                    dirs++;
                    Integer owner = dirToBroker.get(dir);
                    if (owner == null || owner != id) {
                        out.report("directoryToBroker", "broker " + id, Arrays.asList("dir", dir, id),
                            () -> "broker " + id + " registered directory " + dir + ", indexed to broker " + owner);
                    }
                }
            }
        }
        if (offsets != null && offsets.size() != regs.size()) {
            for (Integer id : offsets.keySet()) {
                if (!regs.containsKey(id)) {
                    out.report("registerBrokerRecordOffsets", "broker " + id, Arrays.asList("offsets", "stale", id),
                        () -> "broker " + id + " has a RegisterBrokerRecord offset but no registration");
                }
            }
        }
        if (states != null && states.size() != regs.size()) {
            for (Integer id : states.keySet()) {
                if (!regs.containsKey(id)) {
                    out.report("heartbeatManager", "broker " + id, Arrays.asList("hb", "stale", id),
                        () -> "the heartbeat manager tracks broker " + id + ", which is not registered");
                }
            }
        }
        if (active != null && states != null && HB_FENCED != null && active.size() != activeExpected) {
            int n = activeExpected;
            out.report("heartbeatManager.active", "event", Arrays.asList("hb", "active-count", active.size(), activeExpected),
                () -> active.size() + " brokers in the heartbeat manager's active set, " + n + " unfenced and not shutting down");
        }
        if (dirToBroker != null && REG_DIRS != null && dirToBroker.size() != dirs) {
            for (Map.Entry<Uuid, Integer> d : dirToBroker.entrySet()) {
                BrokerRegistration reg = regs.get(d.getValue());
                if (reg == null || !((List<Uuid>) invokeMethod(REG_DIRS, reg)).contains(d.getKey())) {
                    out.report("directoryToBroker", "broker " + d.getValue(), Arrays.asList("dir", "stale", d.getKey()),
                        () -> "directory " + d.getKey() + " is indexed to broker " + d.getValue() + ", which "
                            + (reg == null ? "is not registered" : "did not register it"));
                }
            }
        }
    }
}
