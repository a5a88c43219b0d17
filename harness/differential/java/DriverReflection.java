/*
 * Reflection, for the members that differ between release lines (DriverLine*): found by
 * name and arity or by the arguments' types, looked up once and cached, so one source
 * compiles against every build's jars.
 */
package org.apache.kafka.controller;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

final class DriverReflection {
    private DriverReflection() {
    }

    static final class ReflectionFailure extends RuntimeException {
        ReflectionFailure(Throwable cause) {
            super(cause);
        }
    }

    /** What was thrown, without the reflection wrappers around it. */
    static Throwable unwrap(Throwable t) {
        while ((t instanceof InvocationTargetException || t instanceof ReflectionFailure)
            && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    static Class<?> classOrNull(String name) {
        try {
            return Class.forName(name);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    static Field field(Class<?> type, String name) {
        try {
            Field f = type.getDeclaredField(name);
            f.setAccessible(true);
            return f;
        } catch (NoSuchFieldException e) {
            return null;
        }
    }

    static Object get(Field f, Object target) {
        try {
            return f.get(target);
        } catch (IllegalAccessException e) {
            throw new ReflectionFailure(e);
        }
    }

    static Object staticField(Class<?> type, String name) {
        try {
            return type.getField(name).get(null);
        } catch (NoSuchFieldException | IllegalAccessException e) {
            return null;
        }
    }

    static final Map<String, Method> METHODS = new HashMap<>();

    /** The method of that name (and arity; -1: any) declared by the class or a superclass. */
    static Method method(Class<?> type, String name, int arity) {
        String key = type.getName() + "#" + name + "/" + arity;
        if (METHODS.containsKey(key)) {
            return METHODS.get(key);
        }
        Method found = null;
        for (Class<?> c = type; c != null && found == null; c = c.getSuperclass()) {
            for (Method m : c.getDeclaredMethods()) {
                if (m.getName().equals(name) && (arity < 0 || m.getParameterCount() == arity)
                    && !m.isBridge() && !m.isSynthetic()) {
                    found = m;
                    break;
                }
            }
        }
        if (found != null) {
            found.setAccessible(true);
        }
        METHODS.put(key, found);
        return found;
    }

    /** target.name(args) (target a Class: a static method): the method of that name whose
     * parameters take these arguments, declared by the class, a superclass or an interface. */
    static Object invoke(Object target, String name, Object... args) {
        Class<?> type = target instanceof Class ? (Class<?>) target : target.getClass();
        Method m = applicable(type, name, args);
        if (m == null) {
            throw new IllegalStateException("this build has no " + type.getName() + "." + name
                + " taking " + java.util.Arrays.toString(args));
        }
        return invokeMethod(m, target instanceof Class ? null : target, args);
    }

    static final Map<String, Method> APPLICABLE = new HashMap<>();

    static Method applicable(Class<?> type, String name, Object[] args) {
        StringBuilder key = new StringBuilder(type.getName()).append('#').append(name);
        for (Object a : args) {
            key.append(',').append(a == null ? "null" : a.getClass().getName());
        }
        String k = key.toString();
        if (APPLICABLE.containsKey(k)) {
            return APPLICABLE.get(k);
        }
        List<Class<?>> types = new ArrayList<>();
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            types.add(c);
        }
        types.addAll(List.of(type.getInterfaces()));
        Method found = null;
        search:
        for (Class<?> c : types) {
            for (Method m : c.getDeclaredMethods()) {
                if (m.getName().equals(name) && m.getParameterCount() == args.length
                    && !m.isBridge() && !m.isSynthetic() && accepts(m.getParameterTypes(), args)) {
                    found = m;
                    break search;
                }
            }
        }
        if (found != null) {
            found.setAccessible(true);
        }
        APPLICABLE.put(k, found);
        return found;
    }

    static final Map<Class<?>, Class<?>> BOXES = Map.of(boolean.class, Boolean.class,
        int.class, Integer.class, long.class, Long.class, short.class, Short.class,
        byte.class, Byte.class, double.class, Double.class, float.class, Float.class,
        char.class, Character.class);

    static boolean accepts(Class<?>[] params, Object[] args) {
        for (int i = 0; i < params.length; i++) {
            Class<?> p = params[i].isPrimitive() ? BOXES.get(params[i]) : params[i];
            if (args[i] == null ? params[i].isPrimitive() : !p.isInstance(args[i])) {
                return false;
            }
        }
        return true;
    }

    /** The method of that name and arity, called on target (null: static), or an
     * IllegalStateException naming what this build lacks. */
    static Object call(Class<?> type, Object target, String name, Object... args) {
        Method m = method(type, name, args.length);
        if (m == null) {
            throw new IllegalStateException("this build has no " + type.getName() + "." + name
                + " of " + args.length + " parameters");
        }
        return invokeMethod(m, target, args);
    }

    static Object invokeMethod(Method m, Object target, Object... args) {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            if (cause instanceof Error) {
                throw (Error) cause;
            }
            throw new ReflectionFailure(cause);
        } catch (IllegalAccessException e) {
            throw new ReflectionFailure(e);
        }
    }

    static Object newInstance(Class<?> type) {
        try {
            java.lang.reflect.Constructor<?> c = type.getDeclaredConstructor();
            c.setAccessible(true);
            return c.newInstance();
        } catch (ReflectiveOperationException e) {
            throw new ReflectionFailure(e);
        }
    }

    /** A new instance by the constructor of that many parameters. */
    static Object construct(Class<?> type, Object... args) {
        for (java.lang.reflect.Constructor<?> c : type.getDeclaredConstructors()) {
            if (c.getParameterCount() == args.length) {
                c.setAccessible(true);
                try {
                    return c.newInstance(args);
                } catch (ReflectiveOperationException e) {
                    throw new ReflectionFailure(e);
                }
            }
        }
        throw new IllegalStateException("this build has no " + type.getName() + " constructor of "
            + args.length + " parameters");
    }

    interface Handler {
        void handle(Object[] args);
    }

    /** An instance of a one-method callback interface this build declares. */
    static Object proxy(Class<?> iface, Handler handler) {
        return Proxy.newProxyInstance(iface.getClassLoader(), new Class<?>[] {iface}, (p, m, args) -> {
            switch (m.getName()) {
                case "hashCode":
                    return System.identityHashCode(p);
                case "equals":
                    return p == args[0];
                case "toString":
                    return "differential " + iface.getSimpleName();
                default:
                    handler.handle(args);
                    return null;
            }
        });
    }
}
