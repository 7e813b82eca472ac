# Private to the slipway.cluster collection: no compatibility promise outside it.
"""The sha256 upstream published for every release file slipway installs from slipway_artifacts_source upstream or
mirror: CHECKSUMS[file][version][arch], file as _artifacts.release_files names it. SOURCES names where each
version's sums were read. Written by tools/release_checksums.py from the releases' published checksums: add a
release with it, never by hand, and never with a sum computed from a downloaded file.
"""

from __future__ import annotations

CHECKSUMS: dict[str, dict[str, dict[str, str]]] = {
    'cni_plugins': {
        'v1.9.1': {
            'amd64': 'b98f74a0f8522f0a83867178729c1aa70f2158f90c45a2ca8fa791db1c76b303',
            'arm64': '56171987d3947707c3563db2f4001bccaf50fd63468611b9f3cbecb1375ee7ec',
        },
    },
    'crictl': {
        'v1.36.0': {
            'amd64': '83855e114566a8a8c44c548d515670f51de3a5e1da8b2effb59870e2f10c25a3',
            'arm64': '68328594ccf780a80ae2b092d9f6ce484eec7cf540c275242e8fd954bfd95332',
        },
    },
    'etcd': {
        'v3.6.8': {
            'amd64': 'cf9cfe91a4856cb90eed9c99e6aee4b708db2c7888b88a6f116281f04b0ea693',
            'arm64': '438f56a700d17ce761510a3e63e6fa5c1d587b2dd4d7a22c179c09a649366760',
        },
    },
    'kubeadm': {
        'v1.36.0': {
            'amd64': 'f962dcee1f49a51368c3b383742144d99eacff77b2132cd0a540ed8c6b30fe81',
            'arm64': '43d4ca3a9f8f49c2c2f6db2c056de1a00fa110a3dd5aa68a74fbc52e42d96c01',
        },
        'v1.36.1': {
            'amd64': 'f35980333a4dae753807345ae359eca03f48f9945855e6a6a6708fe8b3b24038',
            'arm64': '82fa5119d6687f721cd80cb278bac08f54cc5d3fd0320c66cef9394d42e153a9',
        },
        'v1.36.2': {
            'amd64': 'f95d1b345f97c673ce1c1347eb96bf2587850975155ae701cdfc629a5b575b70',
            'arm64': 'c638f0b4d9b216df8d5bcf41473b81e59143aa0a690392c224e97e6ec91ed3e9',
        },
        'v1.36.3': {
            'amd64': 'bba1733c701bf70ec74ba1cc3fd5745404c1134a8a4b0a5f8560cc9832023421',
            'arm64': '276cfbdc43b10fef663288cc1ed76abf77b1b7f700e9f1c053cb5dc3115484de',
        },
        'v1.36.4': {
            'amd64': '10d054585907f2c8bb823c84f6a66b3bd2a474c3d795475f04e9a44f78650fe6',
            'arm64': '6a849c07d3e1c708f5c40f1ac8be03a56124204dfc7e1931e4113634019c0dad',
        },
    },
    'kubectl': {
        'v1.36.0': {
            'amd64': '123d8c8844f46b1244c547fffb3c17180c0c26dac9890589fe7e67763298748e',
            'arm64': '9f9d9c44a7b5264515ac9da5991584e2395bd50662e651132337e7b4d0c56f8f',
        },
        'v1.36.1': {
            'amd64': '629d3f410e09bf49b64ae7079f7f0bda1191efed311f7d37fdbab0ad5b0ec2b7',
            'arm64': '59f7ee8e477fae658447607dc3c8790ac17a1b016c01c622c12070e969e2d4e7',
        },
        'v1.36.2': {
            'amd64': '1e9045ec32bea85da43de85f0065358529ea7c7a152eca78154fba5b58c27d82',
            'arm64': 'c957eb8c4bea27a3bb35b269edd9082e27f027f7b76b20b5bf4afebc726c6d3e',
        },
        'v1.36.3': {
            'amd64': 'ebbd080e7c2e275093b55915722043257eb24004363e20acb3c4d71919f88336',
            'arm64': '3d86f24401c41ae5a46ac50eef8865fe891d3647d324a0836f6c63757a126e62',
        },
        'v1.36.4': {
            'amd64': '8b8f088da2dab964f853b38464033b1be15ede2839eca751482357c45abdd05a',
            'arm64': '0ecf44450ee6063bf19dd166a103ee6df4a9034455c2abce626e6eea657d73fb',
        },
    },
    'kubelet': {
        'v1.36.0': {
            'amd64': 'd857082946c28493e8fdc52227feabd962e0e0900b6c6e4f6510168043b79dd4',
            'arm64': '049d95107361583e64f3ac9b8c9bdaf73fc7e512a838972b13b423a33ece87e9',
        },
        'v1.36.1': {
            'amd64': '7efa1780c73d9fb3a464002864e582eb2d15aa691e475eaae323093d08feae14',
            'arm64': 'bf274dd3affbf2543d20465dee1f763f668f78c6fbd56197794f81337a49d687',
        },
        'v1.36.2': {
            'amd64': '3ba68cb4f0906053c08ab843131d5cec559cf8c718dbd679950a078b306abbb4',
            'arm64': 'b0b45db96f0e6bf996780b8a2b8d868bf538dc7c3a60cf604cf0ea2d65c24b06',
        },
        'v1.36.3': {
            'amd64': '46707a53209f826ad0f0d62371ac69cd00e78fd9a8176cf5f6f87f18f7f8b718',
            'arm64': '57205a5daf5883873d87b4914e1e00bdd7707acd075714788cfb0fc1f60bc414',
        },
        'v1.36.4': {
            'amd64': 'cf2562db46c48ab84cc3791540778ee7fb1a0a008529adbb434723dd02ed8b4b',
            'arm64': 'fd53ea3fcbd077844f50a3c67e9b52f62972a563674956bab0c0f4fb7ea37d50',
        },
    },
}

SOURCES: dict[str, str] = {
    'cni_plugins v1.9.1': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'crictl v1.36.0': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'etcd v3.6.8': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'kubeadm v1.36.0': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'kubeadm v1.36.1': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'kubeadm v1.36.2': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'kubeadm v1.36.3': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'kubeadm v1.36.4': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'kubectl v1.36.0': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'kubectl v1.36.1': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'kubectl v1.36.2': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'kubectl v1.36.3': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'kubectl v1.36.4': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'kubelet v1.36.0': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'kubelet v1.36.1': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'kubelet v1.36.2': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'kubelet v1.36.3': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
    'kubelet v1.36.4': 'kubespray kubespray-46dbdd399.tar.gz roles/kubespray_defaults/vars/main/checksums.yml',
}
