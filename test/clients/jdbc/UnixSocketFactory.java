import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import javax.net.SocketFactory;

/**
 * Connects the PostgreSQL JDBC driver to a Unix-domain socket, which it
 * cannot do by itself: the test servers listen on nothing else.  Named in
 * the connection URL as socketFactory=UnixSocketFactory with
 * socketFactoryArg=the socket's path.  Only for the test: applications
 * reach PostgreSQL over TCP and need none of this.
 */
public class UnixSocketFactory extends SocketFactory {
    private final String path;

    public UnixSocketFactory(String path) {
        this.path = path;
    }

    @Override
    public Socket createSocket() {
        return new UnixSocket(path);
    }

    @Override
    public Socket createSocket(String host, int port) throws IOException {
        Socket s = createSocket();
        s.connect(null);
        return s;
    }

    @Override
    public Socket createSocket(String host, int port, InetAddress localHost, int localPort) throws IOException {
        return createSocket(host, port);
    }

    @Override
    public Socket createSocket(InetAddress host, int port) throws IOException {
        return createSocket((String) null, port);
    }

    @Override
    public Socket createSocket(InetAddress address, int port, InetAddress localAddress, int localPort)
            throws IOException {
        return createSocket((String) null, port);
    }

    /** The parts of Socket the driver uses, over a Unix-domain channel. */
    private static final class UnixSocket extends Socket {
        private final String path;
        private SocketChannel channel;

        UnixSocket(String path) {
            this.path = path;
        }

        @Override
        public void connect(SocketAddress ignored, int timeout) throws IOException {
            channel = SocketChannel.open(UnixDomainSocketAddress.of(path));
        }

        @Override
        public void connect(SocketAddress ignored) throws IOException {
            connect(ignored, 0);
        }

        @Override
        public boolean isConnected() {
            return channel != null && channel.isConnected();
        }

        @Override
        public boolean isClosed() {
            return channel != null && !channel.isOpen();
        }

        @Override
        public InputStream getInputStream() {
            return Channels.newInputStream(channel);
        }

        @Override
        public OutputStream getOutputStream() {
            return Channels.newOutputStream(channel);
        }

        @Override
        public void close() throws IOException {
            if (channel != null) {
                channel.close();
            }
        }

        // TCP options mean nothing here.
        @Override
        public void setTcpNoDelay(boolean on) {
        }

        @Override
        public void setKeepAlive(boolean on) {
        }

        @Override
        public void setSoTimeout(int timeout) {
        }

        @Override
        public int getSoTimeout() {
            return 0;
        }

        @Override
        public void setReceiveBufferSize(int size) {
        }

        @Override
        public void setSendBufferSize(int size) {
        }
    }
}
