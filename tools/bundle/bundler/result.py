"""What a backend hands over: files to put into the bundle and the component versions."""


class BackendResult:
    def __init__(self, kubernetes_version, backend):
        self.kubernetes_version = kubernetes_version
        self.backend = backend
        self.binaries = []    # (bundle path, source file, component)
        self.images = []      # (bundle path, source file, name, ref, component)
        self.components = {}  # name -> {"version": ..., "source": ..., ...}
        # The conformance suite (--with conformance): the manifest's `conformance` of this release.
        self.conformance_binaries = []  # (bundle path, source file, component)
        self.conformance_images = []    # (bundle path, source file, name, ref, component)

    def add_binary(self, relpath, source, component):
        self.binaries.append((relpath, source, component))

    def add_image(self, relpath, source, name, ref, component):
        self.images.append((relpath, source, name, ref, component))
