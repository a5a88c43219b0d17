/*
 * Coverage feedback: the JaCoCo agent's probe arrays of the classes the settings ask for
 * (coverageClasses), and which probes each answer tells first (newProbes).
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.TreeMap;

import static org.apache.kafka.controller.DriverProtocol.JSON;
import static org.apache.kafka.controller.DriverReflection.classOrNull;
import static org.apache.kafka.controller.DriverReflection.invokeMethod;

final class DriverCoverage {
    /** Per class asked for (simple names in this package): its probe array, which the
     * JaCoCo agent's instrumentation keeps in the synthetic static field $jacocoData (the
     * array the agent dumps), and what of it the harness has been told. */
    final Map<String, boolean[]> probeArrays = new TreeMap<>();
    final Map<String, boolean[]> probesTold = new TreeMap<>();

    /** {class: probe count} for each class asked for that runs instrumented (empty without
     * the agent). The array is the one the agent's runtime holds for the class (and dumps):
     * the instrumentation's own $jacocoInit hands it out and sets no probe. For a class
     * file of Java 11 or later it is the bootstrap method of a dynamic constant
     * (lookup, name, type); before, a no-argument method that also fills $jacocoData. */
    ObjectNode openProbes(JsonNode classes) {
        ObjectNode out = JSON.createObjectNode();
        for (JsonNode c : classes) {
            String simple = c.asText();
            Class<?> type = classOrNull("org.apache.kafka.controller." + simple);
            boolean[] probes = type == null ? null : jacocoProbes(type);
            if (probes == null) {
                continue;
            }
            probeArrays.put(simple, probes);
            probesTold.put(simple, new boolean[probes.length]);
            out.put(simple, probes.length);
        }
        return out;
    }

    static boolean[] jacocoProbes(Class<?> type) {
        for (Method m : type.getDeclaredMethods()) {
            if (!m.getName().equals("$jacocoInit") || m.getReturnType() != boolean[].class) {
                continue;
            }
            m.setAccessible(true);
            if (m.getParameterCount() == 0) {
                return (boolean[]) invokeMethod(m, null);
            }
            if (m.getParameterCount() == 3) {
                return (boolean[]) invokeMethod(m, null, java.lang.invoke.MethodHandles.lookup(),
                    "$jacocoData", Object.class);
            }
        }
        return null;
    }

    /** {class: [probe indexes set since the last answer]}, or null when none. */
    ObjectNode newProbes() {
        ObjectNode out = null;
        for (Map.Entry<String, boolean[]> e : probeArrays.entrySet()) {
            boolean[] now = e.getValue();
            boolean[] told = probesTold.get(e.getKey());
            ArrayNode fresh = null;
            for (int i = 0; i < now.length; i++) {
                if (now[i] && !told[i]) {
                    told[i] = true;
                    if (fresh == null) {
                        if (out == null) {
                            out = JSON.createObjectNode();
                        }
                        fresh = out.putArray(e.getKey());
                    }
                    fresh.add(i);
                }
            }
        }
        return out;
    }
}
