// Testcontainers for Java has no Redis module of its own: its documentation and the Redis
// examples users copy (Spring Session's, for one) wait with
//     Wait.forLogMessage(".*Ready to accept connections.*\\n", 1)
// and LogMessageWaitStrategy tests each log frame (one line with its newline) with
// String.matches(regex). This runs Java's own regex engine over a server's stdout, one frame
// per line as Docker delivers them, and prints how many frames match.
//
//   java LogRegex.java <regex> < stdout-of-the-server
import java.io.BufferedReader;
import java.io.InputStreamReader;

public class LogRegex {
    public static void main(String[] args) throws Exception {
        String regex = args[0];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        int matched = 0;
        for (String line; (line = in.readLine()) != null; ) {
            if ((line + "\n").matches(regex)) matched++;
        }
        System.out.println("matched " + matched);
    }
}
