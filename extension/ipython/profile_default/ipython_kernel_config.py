# Kernels started by `make lab` load the extension, so %context works without %load_ext.
c = get_config()  # noqa: F821 - provided by IPython when it reads this file
c.InteractiveShellApp.extensions = ["retrieval_kernel"]
