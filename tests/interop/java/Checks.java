import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * The output of every check program: one JSON line per check, {"check": name, "ok": true|false, "detail": ...}.
 * The Python side (tests/interop/java_programs.py) reads these lines; a check that throws is reported with the
 * exception's class and message, never stops the program, so one failure does not hide the others.
 */
public final class Checks {
    private Checks() {}

    public interface Body {
        Object run() throws Exception;
    }

    /** Runs `body`; its return value (a String, Number, Boolean, Map, Collection or null) becomes the detail. */
    public static boolean check(String name, Body body) {
        try {
            Object detail = body.run();
            emit(name, true, detail);
            return true;
        } catch (Throwable t) {
            Throwable cause = t;
            while ((cause instanceof java.util.concurrent.ExecutionException
                    || cause instanceof java.util.concurrent.CompletionException) && cause.getCause() != null) {
                cause = cause.getCause();
            }
            emit(name, false, cause.getClass().getName() + ": " + cause.getMessage());
            return false;
        }
    }

    /** Fails the current check with a message when `condition` is false. */
    public static void require(boolean condition, String message) {
        if (!condition) {
            throw new IllegalStateException(message);
        }
    }

    public static void emit(String name, boolean ok, Object detail) {
        StringBuilder out = new StringBuilder();
        out.append("{\"check\":").append(json(name)).append(",\"ok\":").append(ok)
           .append(",\"detail\":").append(json(detail)).append('}');
        System.out.println(out);
        System.out.flush();
    }

    public static String json(Object value) {
        if (value == null) {
            return "null";
        }
        if (value instanceof Number || value instanceof Boolean) {
            return value.toString();
        }
        if (value instanceof Map) {
            List<String> parts = new ArrayList<>();
            for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                parts.add(json(String.valueOf(entry.getKey())) + ":" + json(entry.getValue()));
            }
            return "{" + String.join(",", parts) + "}";
        }
        if (value instanceof Collection) {
            List<String> parts = new ArrayList<>();
            for (Object item : (Collection<?>) value) {
                parts.add(json(item));
            }
            return "[" + String.join(",", parts) + "]";
        }
        String text = value.toString();
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        return out.append('"').toString();
    }
}
